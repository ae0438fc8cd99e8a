package io.tensorsocket.cli;

import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

/**
 * What a producer process holds, measured once everything settled after a warm-up (its baseline) and again
 * when every consumer has left: open file descriptors, threads (not the JDK's carrier threads for virtual
 * threads), and connection threads that outlived their consumers (from a {@code jcmd} thread dump). Read from
 * {@code /proc}; a figure that cannot be read is -1 (or 0 for the dump), never a false leak.
 *
 * <p>The JDK starts what serves virtual threads blocked on sockets (its pollers: a thread and four epoll descriptors
 * here) the first time one blocks, and the unparker thread the first time one waits with a timeout; a warm-up whose
 * handshakes found their messages already there leaves them for later, when they would read as a leak. The baseline
 * is therefore taken after a connection that sends nothing has kept a connection thread waiting.
 */
final class LeakProbe {

    /** What the producer held more than at its baseline, and each leak said in words. */
    record Leaks(long fds, long threads, List<String> problems) {}

    private final long pid;
    private final Path scratch;
    private final long fds;
    private final long threads;
    /** What the descriptors and threads were at the baseline, to name what a leak added. */
    private final List<String> fdTargets;

    private final List<String> threadNames;

    private LeakProbe(long pid, Path scratch, long fds, long threads) {
        this.pid = pid;
        this.scratch = scratch;
        this.fds = fds;
        this.threads = threads;
        this.fdTargets = fdTargets(pid);
        this.threadNames = threadNames(pid);
    }

    /**
     * The baseline of process {@code pid}, a producer listening on {@code controlSocket}, once a connection that sends
     * nothing was held open and closed and its descriptor count stopped changing; dumps go in {@code scratch}.
     */
    static LeakProbe baseline(long pid, Path controlSocket, Path scratch) throws IOException {
        holdSilentConnection(pid, controlSocket);
        return new LeakProbe(pid, scratch, awaitStable(() -> fds(pid)), nonCarrierThreads(pid));
    }

    /**
     * Keeps a connection to the producer open, sending nothing, until its connection thread has waited on it (the
     * JDK's poller thread is there, or 3 s passed; at least 0.5 s), then closes it.
     */
    private static void holdSilentConnection(long pid, Path controlSocket) throws IOException {
        try (SocketChannel ignored = SocketChannel.open(UnixDomainSocketAddress.of(controlSocket))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            sleepMs(500);
            while (!threadNames(pid).contains("MasterPoller") && System.nanoTime() < deadline) {
                sleepMs(50);
            }
        }
    }

    /** Compares the process with its baseline, giving it up to 10 s to close what its consumers left. */
    Leaks check() {
        List<String> problems = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long nowFds;
        while ((nowFds = fds(pid)) != fds && System.nanoTime() < deadline) {
            sleepMs(100);
        }
        long fdLeak = nowFds - fds;
        if (fdLeak != 0) {
            problems.add("the producer holds " + nowFds + " file descriptors after everyone left, " + fds + " before"
                    + added(fdTargets, fdTargets(pid)));
        }
        long nowThreads;
        while ((nowThreads = nonCarrierThreads(pid)) > threads && System.nanoTime() < deadline) {
            sleepMs(100);
        }
        long threadLeak = Math.max(0, nowThreads - threads);
        if (threadLeak != 0) {
            problems.add("the producer runs " + nowThreads + " threads after everyone left, " + threads + " before"
                    + added(threadNames, threadNames(pid)));
        }
        long connections = connectionThreads();
        if (connections > 0) {
            threadLeak += connections;
            problems.add(connections + " connection threads of the producer outlived their consumers");
        }
        return new Leaks(fdLeak, threadLeak, problems);
    }

    /** What {@code now} holds more of than {@code before} (a multiset difference), said for a problem's message. */
    private static String added(List<String> before, List<String> now) {
        List<String> more = new ArrayList<>(now);
        before.forEach(more::remove);
        List<String> fewer = new ArrayList<>(before);
        now.forEach(fewer::remove);
        return " (added " + more + ", gone " + fewer + ")";
    }

    /** Where each of the process's descriptors points ({@code socket:[inode]} names only the kind). */
    private static List<String> fdTargets(long pid) {
        return listed(
                Path.of("/proc", Long.toString(pid), "fd"),
                f -> Files.readSymbolicLink(f).toString().replaceAll("\\[\\d+\\]$", ""));
    }

    /** The names of the process's threads. */
    private static List<String> threadNames(long pid) {
        return listed(
                Path.of("/proc", Long.toString(pid), "task"),
                t -> Files.readString(t.resolve("comm")).strip());
    }

    /** What {@code read} says of each entry of {@code dir}, sorted ("?" for one it cannot read). */
    private static List<String> listed(Path dir, Reading read) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> {
                        try {
                            return read.of(p);
                        } catch (IOException e) {
                            return "?";
                        }
                    })
                    .sorted()
                    .toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private interface Reading {
        String of(Path entry) throws IOException;
    }

    private static long fds(long pid) {
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    /** Threads of a process, not counting the carrier threads the JDK keeps for virtual threads. */
    private static long nonCarrierThreads(long pid) {
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            return s.filter(t -> {
                        try {
                            return !Files.readString(t.resolve("comm")).startsWith("ForkJoinPool");
                        } catch (IOException e) {
                            return false;
                        }
                    })
                    .count();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long awaitStable(LongSupplier value) {
        long last = value.getAsLong();
        for (int i = 0; i < 50; i++) {
            sleepMs(100);
            long now = value.getAsLong();
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }

    /** Virtual connection threads alive in the producer, from a thread dump (0 where jcmd is unavailable). */
    private long connectionThreads() {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        Path dump = scratch.resolve("threads.json");
        try {
            Process p = new ProcessBuilder(
                            jcmd.toString(), Long.toString(pid), "Thread.dump_to_file", "-format=json", dump.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0 || !Files.exists(dump)) {
                return 0;
            }
            String json = Files.readString(dump);
            Files.delete(dump);
            return json.split("\"tensorsocket-conn\"", -1).length - 1L;
        } catch (IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
