package io.tensorsocket.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The soak's tally and verdict: what was done (joins, kills, stalls, restarts), what every consumer verified
 * (epochs, samples, defects, lost samples), the worst waits, what leaked, and every failure in words. A
 * consumer's lines and exit are judged when it is reaped; the soak passes only with no failure, nothing lost,
 * no defect and no leak.
 */
final class SoakVerdict {
    final List<String> failures = new ArrayList<>();
    int joins;
    int cleanLeaves;
    int kills;
    int stalls;
    int evictions;
    int restarts;
    int toldProducerGone;
    int refusedWhileDown;
    long epochsVerified;
    long epochStartEpochs;
    long rollingEpochs;
    long samplesVerified;
    long samplesLost;
    long defects;
    long worstResumeAfterKillMs;
    long worstExitAfterProducerKillMs;
    long fdLeak;
    long threadLeak;
    long filesLeft;

    boolean ok() {
        return failures.isEmpty()
                && samplesLost == 0
                && defects == 0
                && fdLeak == 0
                && threadLeak == 0
                && filesLeft == 0;
    }

    /** Judges consumer {@code c}, which has exited, by what it reported and how it ended. */
    void judge(SoakChild c, long samplesPerEpoch) {
        for (String line : c.lines) {
            if (!line.startsWith("{\"epoch\"")) {
                continue;
            }
            Map<String, String> e = JsonLine.parse(line);
            long unique = Long.parseLong(e.get("unique"));
            // An epoch from an epoch start, or an exact one from mid-epoch, is one pass; a rolling epoch spans two
            // producer epochs, each in its own shuffled order: repeats are expected there.
            boolean fromStart = !"rolling".equals(e.get("start"));
            long bad = (fromStart ? Long.parseLong(e.get("duplicates")) : 0)
                    + Long.parseLong(e.get("corrupt"))
                    + Long.parseLong(e.get("out_of_order"));
            defects += bad;
            if (bad != 0) {
                failures.add("consumer " + c.id + " (batch " + c.batchSize + "): " + line);
            }
            if ("true".equals(e.get("complete"))) {
                epochsVerified++;
                samplesVerified += unique;
                if (fromStart) {
                    epochStartEpochs++;
                    long lost = samplesPerEpoch - unique;
                    samplesLost += lost;
                    if (lost != 0) {
                        failures.add("consumer " + c.id + " lost " + lost + " samples: " + line);
                    }
                } else {
                    rollingEpochs++;
                }
            }
        }
        int code = c.process.exitValue();
        String err = c.errorLine();
        if (c.expectProducerGone) {
            if (code != 0 && err.contains("lost the connection to producer")) {
                toldProducerGone++;
            } else if (code != 0
                    && c.progressCount() == 0
                    && c.lines.isEmpty()
                    && (err.contains("is not running") || err.contains("no producer") || err.contains("went away"))) {
                refusedWhileDown++;
            } else if (code != 0 && c.stalled && err.contains("stall timeout")) {
                evictions++; // its stall was judged before the producer died (its move unanswered, or a batch held)
            } else if (code != 0 || !c.finishedEpochs()) {
                failures.add("consumer " + c.id + " did not report the producer's death: exit " + code + ", " + err);
            }
        } else if (c.expectedDeath) {
            // killed by us
        } else if (code == 0) {
            cleanLeaves++;
        } else if (err.contains("stall timeout")) {
            evictions++;
        } else {
            failures.add(
                    "consumer " + c.id + " (batch " + c.batchSize + ") failed unexpectedly: exit " + code + ", " + err);
        }
    }

    /** The summary line: one JSON object. */
    String summary(long seed, double seconds, long stallTimeoutMs) {
        return Json.object()
                .put("event", "soak")
                .put("ok", ok())
                .put("seed", seed)
                .put("seconds", seconds)
                .put("joins", joins)
                .put("clean_leaves", cleanLeaves)
                .put("kills", kills)
                .put("stalls", stalls)
                .put("evictions", evictions)
                .put("producer_restarts", restarts)
                .put("consumers_told_producer_gone", toldProducerGone)
                .put("consumers_refused_while_down", refusedWhileDown)
                .put("epochs_verified", epochsVerified)
                .put("epoch_start_epochs", epochStartEpochs)
                .put("rolling_epochs", rollingEpochs)
                .put("samples_verified", samplesVerified)
                .put("samples_lost", samplesLost)
                .put("defects", defects)
                .put("worst_resume_after_kill_ms", worstResumeAfterKillMs)
                .put("worst_exit_after_producer_kill_ms", worstExitAfterProducerKillMs)
                .put("stall_timeout_ms", stallTimeoutMs)
                .put("fd_leak", fdLeak)
                .put("thread_leak", threadLeak)
                .put("files_left", filesLeft)
                .put("failures", String.join("; ", failures))
                .toString();
    }
}
