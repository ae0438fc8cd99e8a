package io.tensorsocket.cli;

import io.tensorsocket.ProducerAlreadyRunningException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.directory.ShareFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;

/**
 * {@code tensorsocket clean}: removes what dead producers left behind. A directory is stale when no
 * process holds its lock; it is removed by taking that lock first, so a producer starting at the same
 * moment is never disturbed, and a live one is left alone.
 */
@Command(
        name = "clean",
        mixinStandardHelpOptions = true,
        description = "Remove the files of producers that are no longer running (live ones are left alone).")
final class CleanCommand implements Callable<Integer> {

    @Override
    public Integer call() throws IOException {
        Path base = ProducerDirectory.baseDirectory();
        if (!Files.isDirectory(base)) {
            System.out.println("nothing to clean: " + base + " does not exist");
            return 0;
        }
        List<Path> dirs;
        try (Stream<Path> s = Files.list(base)) {
            dirs = s.filter(Files::isDirectory).sorted().toList();
        }
        int removed = 0;
        int live = 0;
        for (Path d : dirs) {
            if (ProducerDirectory.isLocked(d)) {
                live++;
                continue;
            }
            if (!StaleProducers.isProducerDirectory(d)) {
                continue; // not a producer directory
            }
            String pid = StaleProducers.pid(d);
            try {
                ProducerDirectory.claim(d).close();
                System.out.println("removed " + d + " (its producer" + (pid.isEmpty() ? "" : ", pid " + pid)
                        + ", is not running)");
                removed++;
            } catch (ProducerAlreadyRunningException e) {
                live++; // started in the meantime
            } catch (IOException | RuntimeException e) {
                System.out.println("could not remove " + d + ": " + e.getMessage());
            }
        }
        for (String share : ShareFiles.leftBehind()) {
            ShareFiles.removeUnused(share);
            System.out.println("removed the files share '" + share + "' left in " + base + " (.share.lock, .share.log:"
                    + " a start that failed, or a producer that was killed; no producer of the name runs)");
        }
        System.out.println("removed " + removed + " stale producer director" + (removed == 1 ? "y" : "ies") + "; "
                + live + " running producer" + (live == 1 ? "" : "s") + " left alone");
        return 0;
    }
}
