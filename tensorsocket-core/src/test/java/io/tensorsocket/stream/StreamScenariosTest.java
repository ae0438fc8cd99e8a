package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The stream scenarios shared with the Python client (docs/test-vectors/scenarios.txt): for each, what a
 * consumer sees, start point, batches with the slots they span, and releases, in order. The Python client
 * walks the same scenarios through its port of the model (clients/python/tests/test_stream.py).
 *
 * <p>The file was written by this model ({@code -Dtensorsocket.writeVectors=true} rewrites it) and its first
 * scenarios checked by hand; from then on it pins the rules, in both languages.
 */
class StreamScenariosTest {

    /** Scenario lines: name, then the given parameters. */
    private static final String[] GIVEN = {
        "fresh-regroup-4-into-6 samples=14 producer_batch=4 rubber_band=2 published=0 epoch_ended=no consumer_batch=6 drop_last=no epochs=2 producer_epochs=0 leave_after=0",
        "fresh-drop-last samples=14 producer_batch=4 rubber_band=2 published=0 epoch_ended=no consumer_batch=6 drop_last=yes epochs=2 producer_epochs=0 leave_after=0",
        "replay-from-epoch-start samples=20 producer_batch=4 rubber_band=3 published=2 epoch_ended=no consumer_batch=5 drop_last=no epochs=1 producer_epochs=0 leave_after=0",
        "rolling-mid-epoch samples=20 producer_batch=4 rubber_band=1 published=3 epoch_ended=no consumer_batch=8 drop_last=no epochs=2 producer_epochs=0 leave_after=0",
        "rolling-across-short-last-batch samples=10 producer_batch=4 rubber_band=0 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=2 producer_epochs=0 leave_after=0",
        "rolling-drop-last samples=10 producer_batch=4 rubber_band=0 published=1 epoch_ended=no consumer_batch=4 drop_last=yes epochs=2 producer_epochs=0 leave_after=0",
        "join-after-epoch-end samples=8 producer_batch=4 rubber_band=4 published=2 epoch_ended=yes consumer_batch=3 drop_last=no epochs=1 producer_epochs=0 leave_after=0",
        "join-before-epoch-end-replays-all samples=8 producer_batch=4 rubber_band=4 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=1 producer_epochs=0 leave_after=0",
        "consumer-batch-larger-than-epoch samples=6 producer_batch=4 rubber_band=1 published=0 epoch_ended=no consumer_batch=9 drop_last=no epochs=2 producer_epochs=0 leave_after=0",
        "consumer-batch-one samples=5 producer_batch=2 rubber_band=1 published=0 epoch_ended=no consumer_batch=1 drop_last=no epochs=1 producer_epochs=0 leave_after=0",
        "leave-epoch-early samples=12 producer_batch=3 rubber_band=1 published=0 epoch_ended=no consumer_batch=4 drop_last=no epochs=2 producer_epochs=0 leave_after=1",
        "rolling-until-the-stream-ends samples=8 producer_batch=4 rubber_band=0 published=1 epoch_ended=no consumer_batch=3 drop_last=no epochs=3 producer_epochs=2 leave_after=0",
        "wait-for-next-epoch-start samples=10 producer_batch=4 rubber_band=1 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=2 producer_epochs=0 leave_after=0 start_policy=next_epoch_start",
        "wait-policy-inside-rubber-band-starts-now samples=10 producer_batch=4 rubber_band=2 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=1 producer_epochs=0 leave_after=0 start_policy=next_epoch_start",
        "wait-policy-after-epoch-end-starts-now samples=8 producer_batch=4 rubber_band=0 published=2 epoch_ended=yes consumer_batch=4 drop_last=no epochs=1 producer_epochs=0 leave_after=0 start_policy=next_epoch_start",
        "exact-mid-epoch samples=20 producer_batch=4 rubber_band=1 published=3 epoch_ended=no consumer_batch=8 drop_last=no epochs=2 producer_epochs=0 leave_after=0 mid_epoch=exact",
        "exact-across-short-last-batch-drop-last samples=10 producer_batch=4 rubber_band=0 published=2 epoch_ended=no consumer_batch=3 drop_last=yes epochs=2 producer_epochs=0 leave_after=0 mid_epoch=exact",
        "exact-inside-rubber-band-starts-at-epoch-start samples=20 producer_batch=4 rubber_band=3 published=2 epoch_ended=no consumer_batch=5 drop_last=no epochs=1 producer_epochs=0 leave_after=0 mid_epoch=exact",
        "exact-until-the-stream-ends samples=8 producer_batch=4 rubber_band=0 published=1 epoch_ended=no consumer_batch=3 drop_last=no epochs=3 producer_epochs=2 leave_after=0 mid_epoch=exact",
        "exact-waits-when-asked samples=10 producer_batch=4 rubber_band=1 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=1 producer_epochs=0 leave_after=0 start_policy=next_epoch_start mid_epoch=exact",
        "rank-2-of-4-padded samples=10 producer_batch=4 rubber_band=2 published=0 epoch_ended=no consumer_batch=2 drop_last=no epochs=2 producer_epochs=0 leave_after=0 rank=2/4",
        "rank-3-of-4-drop-last samples=10 producer_batch=4 rubber_band=2 published=0 epoch_ended=no consumer_batch=2 drop_last=yes epochs=2 producer_epochs=0 leave_after=0 rank=3/4",
        "rank-0-of-3-exact-mid-epoch samples=20 producer_batch=4 rubber_band=0 published=2 epoch_ended=no consumer_batch=3 drop_last=no epochs=2 producer_epochs=0 leave_after=0 mid_epoch=exact rank=0/3",
        "rank-1-of-2-leaves-early samples=12 producer_batch=5 rubber_band=1 published=0 epoch_ended=no consumer_batch=2 drop_last=no epochs=2 producer_epochs=0 leave_after=1 rank=1/2",
        "rank-4-of-6-world-larger-than-epoch samples=4 producer_batch=3 rubber_band=0 published=0 epoch_ended=no consumer_batch=2 drop_last=no epochs=2 producer_epochs=2 leave_after=0 rank=4/6",
    };

    static StreamSimulation parse(String given) {
        String[] w = given.split(" ");
        Map<String, String> kv = new HashMap<>();
        for (int i = 1; i < w.length; i++) {
            String[] p = w[i].split("=", 2);
            kv.put(p[0], p[1]);
        }
        return new StreamSimulation(
                Long.parseLong(kv.get("samples")),
                Integer.parseInt(kv.get("producer_batch")),
                Integer.parseInt(kv.get("rubber_band")),
                Integer.parseInt(kv.get("published")),
                kv.get("epoch_ended").equals("yes"),
                Integer.parseInt(kv.get("consumer_batch")),
                kv.get("drop_last").equals("yes"),
                Integer.parseInt(kv.get("epochs")),
                Integer.parseInt(kv.get("producer_epochs")),
                Integer.parseInt(kv.get("leave_after")),
                StartPolicy.valueOf(kv.getOrDefault("start_policy", "join_now").toUpperCase(Locale.ROOT)),
                StartMode.valueOf(kv.getOrDefault("mid_epoch", "rolling").toUpperCase(Locale.ROOT)),
                rank(kv.getOrDefault("rank", "0/1")));
    }

    private static RankShare rank(String rw) {
        String[] p = rw.split("/");
        return new RankShare(Integer.parseInt(p[0]), Integer.parseInt(p[1]));
    }

    static String render() {
        StringBuilder sb = new StringBuilder();
        sb.append("""
                # Stream scenarios shared by the Java and Python clients. Each block: a scenario line with what is
                # given, then what the consumer sees, in order, and "end". Written by the Java stream model
                # (StreamScenariosTest, -Dtensorsocket.writeVectors=true); checked by it and by clients/python/tests/test_stream.py.
                #
                # given: samples per epoch, the loader's batch size (each epoch's last batch is short when it does not
                #   divide), the rubber band, batches published before the consumer joins (epoch_ended: whether the
                #   producer had ended an epoch completed by them), the consumer's batch size and drop-last, the
                #   consumer epochs iterated, producer epochs (0 = unbounded), leave_after (>0: the consumer leaves
                #   each epoch after that many batches), start_policy (optional; join_now when absent, or
                #   next_epoch_start), mid_epoch (optional; how a consumer joining mid-epoch starts: rolling when
                #   absent, or exact, where the producer chooses the order), rank (optional; R/W: the consumer is
                #   rank R of a job of W ranks and takes its share of each epoch, see RankShare; 0/1 when absent).
                #   Each batch is closed before the next is asked for.
                # start <mode> epoch=<producer epoch> sample=<sample> retained=<first..last seq, or ->
                # batch epoch=<consumer epoch> index=<i> sample=<first sample in the epoch> size=<n>
                #   pieces=<seq>:<offset in its slot>+<samples>,...   (one piece: a view of that slot)
                # release <seq>                (a RELEASE sent to the producer)
                # end epoch=<e>                (the epoch's loop ended)

                """);
        for (String g : GIVEN) {
            sb.append("scenario ").append(g).append('\n');
            for (StreamSimulation.Event e : parse(g).run().events()) {
                sb.append(e).append('\n');
            }
            sb.append("end\n\n");
        }
        return sb.toString();
    }

    static Path vectors() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs/test-vectors"))) {
                return p.resolve("docs/test-vectors/scenarios.txt");
            }
        }
        throw new AssertionError(
                "docs/test-vectors not found above " + Path.of("").toAbsolutePath());
    }

    @Test
    void theModelSeesWhatTheSharedScenariosSay() throws IOException {
        Path file = vectors();
        String rendered = render();
        if (Boolean.getBoolean("tensorsocket.writeVectors")) {
            Files.writeString(file, rendered, StandardCharsets.UTF_8);
        }
        List<String> want = new ArrayList<>(Files.readAllLines(file, StandardCharsets.UTF_8));
        List<String> got = rendered.lines().toList();
        assertFalse(want.isEmpty());
        for (int i = 0; i < Math.max(want.size(), got.size()); i++) {
            String w = i < want.size() ? want.get(i) : "<missing>";
            String g = i < got.size() ? got.get(i) : "<missing>";
            assertEquals(w, g, "line " + (i + 1) + " of " + file);
        }
    }
}
