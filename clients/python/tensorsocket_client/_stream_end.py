"""What a consumer is told where a finite stream ends for it (see the Java consumer.StreamEnd): that it asked for an
epoch past its last, naming how many it got, or that its last epoch came short."""

from . import wire


def _joined(welcome) -> str:
    if welcome.start_sample == 0:
        return ""
    return " (it joined at sample %d of epoch %d)" % (welcome.start_sample, welcome.start_epoch)


def no_more_epochs(producer: str, welcome, got: int) -> str:
    """The stream has no further epoch for this consumer, which got ``got`` epochs of it."""
    return ("the stream of producer '%s' has ended%s: this consumer got %d %s of it%s and no further epoch comes; "
            "iterate while not is_end_of_stream(), or run the producer for more epochs"
            % (producer, " (its %d epochs)" % welcome.epochs if welcome.epochs > 0 else "", got,
               "epoch" if got == 1 else "epochs", _joined(welcome)))


def short_epoch(producer: str, welcome, epoch: int, missing: int) -> str:
    """The stream ended ``missing`` samples into this consumer's epoch ``epoch``."""
    why = ("its source fixes its own order, so the samples of the epoch the consumer joined late for cannot be "
           "loaded again" if welcome.start_mode == wire.START_ROLLING
           else "the producer could not load the rest of the epoch again by index")
    return ("the stream of producer '%s' ended %d samples short of this consumer's epoch %d%s: %s; start consumers "
            "together with the producer (within its start grace) for whole epochs"
            % (producer, missing, epoch, _joined(welcome), why))
