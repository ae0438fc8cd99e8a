package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Who may connect: only the producer's user by default, members of one named group on request, and
 * nobody over a network. The second-user cases run a real consumer JVM as {@code nobody}.
 */
class AccessProcessTest extends ProcessTestBase {
    private static final String SPEC = "samples=500,shape=8,dtype=float32,seed=21";
    private static Path readableClassPath;

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
    }

    private static String group(Path p) throws IOException {
        return Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
                .group()
                .getName();
    }

    @Test
    void byDefaultOnlyTheOwnerCanReachAnything() throws Exception {
        serve("private", SPEC, 10, 0);
        Path dir = base.resolve("private");
        assertEquals("rwx------", mode(base));
        assertEquals("rwx------", mode(dir));
        assertEquals("rw-------", mode(dir.resolve("control.sock")));
        assertEquals("rw-------", mode(dir.resolve("arena")));
        assertEquals("rw-------", mode(dir.resolve("producer.lock")));
    }

    @Test
    void aGroupGrantSharesWithThatGroupOnly() throws Exception {
        String g = Files.readAttributes(base, PosixFileAttributes.class).group().getName();
        serve("shared", SPEC, 10, 0, "--group", g);
        Path dir = base.resolve("shared");
        assertEquals("rwx--x--x", mode(base), "others may pass through the per-user directory, not list it");
        assertEquals("rwxr-x---", mode(dir));
        assertEquals("rw-rw----", mode(dir.resolve("control.sock")));
        assertEquals("rw-r-----", mode(dir.resolve("arena")));
        assertEquals("rw-------", mode(dir.resolve("producer.lock")));
        for (Path p : List.of(dir, dir.resolve("control.sock"), dir.resolve("arena"))) {
            assertEquals(g, group(p), p.toString());
        }
        Proc unknown = start(
                "serve",
                "--name",
                "nogroup-here",
                "--synthetic",
                SPEC,
                "--batch-size",
                "10",
                "--group",
                "no-such-group-xyz");
        assertEquals(1, unknown.exitCode(Duration.ofSeconds(30)));
        assertTrue(unknown.errorLine().contains("no group named 'no-such-group-xyz'"), unknown.errorLine());
    }

    @Test
    void anotherUserIsRefusedAndCannotReadTheArena() throws Exception {
        assumeSecondUser();
        serve("mine", SPEC, 10, 0);
        Path dir = base.resolve("mine");
        Proc other = asNobody("consume", "--dir", dir.toString(), "--batch-size", "10");
        assertEquals(1, other.exitCode(Duration.ofSeconds(30)), other.stderr());
        assertTrue(other.errorLine().contains("not allowed to reach producer 'mine'"), other.errorLine());
        assertNobodyCannotRead(dir.resolve("arena"));

        // With the per-user directory passable (a group producer next door), the private one is still refused.
        serve("next-door", SPEC, 10, 0, "--group", "nogroup");
        Proc again = asNobody("consume", "--dir", dir.toString(), "--batch-size", "10");
        assertEquals(1, again.exitCode(Duration.ofSeconds(30)), again.stderr());
        assertTrue(
                again.errorLine().contains("belongs to user 'root'")
                        && again.errorLine().contains("not shared"),
                again.errorLine());
        assertNobodyCannotRead(dir.resolve("arena"));
    }

    @Test
    void aMemberOfTheGrantedGroupConsumesExactly() throws Exception {
        assumeSecondUser();
        serve("ours", SPEC, 10, 1, "--group", "nogroup");
        Proc member = asNobody("consume", "--dir", base.resolve("ours").toString(), "--batch-size", "7");
        assertEquals(0, member.exitCode(Duration.ofSeconds(60)), member.stderr());
        assertExactEpoch(member.json().getFirst(), 500, "epoch_start");
    }

    @Test
    void aUserOutsideTheGrantedGroupIsRefused() throws Exception {
        assumeSecondUser();
        serve("theirs", SPEC, 10, 0, "--group", "root");
        Proc outsider = asNobody("consume", "--dir", base.resolve("theirs").toString(), "--batch-size", "7");
        assertEquals(1, outsider.exitCode(Duration.ofSeconds(30)), outsider.stderr());
        assertTrue(
                outsider.errorLine().contains("shared with group 'root', which 'nobody' is not in"),
                outsider.errorLine());
        assertNobodyCannotRead(base.resolve("theirs").resolve("arena"));
    }

    @Test
    void thePythonClientFollowsTheSameRuleAsAMemberAndAsAnOutsider() throws Exception {
        assumeSecondUser();
        assumePython("numpy");
        serve("py-ours", SPEC, 10, 1, "--group", "nogroup");
        Proc member = pythonAsNobody("consume", "--dir", base.resolve("py-ours").toString(), "--batch-size", "7");
        assertEquals(0, member.exitCode(Duration.ofSeconds(60)), member.stderr());
        assertExactEpoch(member.json().getFirst(), 500, "epoch_start");

        serve("py-theirs", SPEC, 10, 0, "--group", "root");
        Proc outsider =
                pythonAsNobody("consume", "--dir", base.resolve("py-theirs").toString(), "--batch-size", "7");
        assertEquals(1, outsider.exitCode(Duration.ofSeconds(30)), outsider.stderr());
        assertTrue(
                outsider.errorLine().contains("shared with group 'root', which 'nobody' is not in"),
                outsider.errorLine());

        serve("py-mine", SPEC, 10, 0);
        Proc stranger =
                pythonAsNobody("consume", "--dir", base.resolve("py-mine").toString(), "--batch-size", "7");
        assertEquals(1, stranger.exitCode(Duration.ofSeconds(30)), stranger.stderr());
        assertTrue(
                stranger.errorLine().contains("belongs to user 'root'")
                        && stranger.errorLine().contains("not shared"),
                stranger.errorLine());
    }

    @Test
    void nothingListensOrConnectsOnANetworkInterface() throws Exception {
        Proc producer = serve("local", "samples=2000,shape=8,dtype=float32,seed=1", 10, 0);
        Proc consumer = consume("local", 10, "--step-ms", "1");
        long producerPid = Long.parseLong(producer.json().getFirst().get("pid"));
        consumer.awaitLine(l -> true, Duration.ofSeconds(30)); // an epoch finished: it is connected
        Set<Long> inet = inodes(List.of("tcp", "tcp6", "udp", "udp6", "raw", "raw6"), 9);
        Set<Long> unix = inodes(List.of("unix"), 6);
        for (long pid : List.of(producerPid, consumer.pid())) {
            Set<Long> sockets = socketInodes(pid);
            assertFalse(sockets.isEmpty(), "process " + pid + " holds no socket at all?");
            for (long inode : sockets) {
                assertFalse(inet.contains(inode), "process " + pid + " holds an IP socket, inode " + inode);
            }
            assertTrue(
                    sockets.stream().anyMatch(unix::contains), "process " + pid + " talks over a Unix-domain socket");
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static Set<Long> socketInodes(long pid) throws IOException {
        Set<Long> out = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        out.add(Long.parseLong(target.substring(8, target.length() - 1)));
                    }
                } catch (IOException gone) {
                    // closed meanwhile
                }
            }
        }
        return out;
    }

    private static Set<Long> inodes(List<String> tables, int column) throws IOException {
        Set<Long> out = new HashSet<>();
        for (String t : tables) {
            Path p = Path.of("/proc/net", t);
            if (!Files.exists(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (String l : lines.subList(1, lines.size())) {
                String[] f = l.trim().split("\\s+");
                if (f.length > column) {
                    out.add(Long.parseLong(f[column]));
                }
            }
        }
        return out;
    }

    private static void assumeSecondUser() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to act as a second user");
        assumeTrue(
                Files.isExecutable(Path.of("/usr/bin/setpriv")), "needs /usr/bin/setpriv (apt-get install util-linux)");
        Process p = new ProcessBuilder("id", "-u", "nobody").start();
        assumeTrue(
                p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0,
                "needs a user called nobody (useradd --system nobody)");
    }

    private static List<String> nobody(String... command) {
        List<String> cmd =
                new ArrayList<>(List.of("/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"));
        cmd.addAll(List.of(command));
        return cmd;
    }

    private Proc asNobody(String... args) throws IOException {
        List<String> cmd = nobody(
                ProcessHandle.current().info().command().orElseThrow(),
                "-XX:-UsePerfData",
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                classPathNobodyCanRead(),
                Main.class.getName());
        cmd.addAll(List.of(args));
        return startCommand(cmd);
    }

    /** {@code python3 -m tensorsocket_client args...} as {@code nobody} (the checkout is world-readable). */
    private Proc pythonAsNobody(String... args) throws IOException {
        List<String> cmd = nobody(PYTHON, "-u", "-m", "tensorsocket_client");
        cmd.addAll(List.of(args));
        return startCommand(cmd, Map.of("PYTHONPATH", pythonClient().toString(), "PYTHONDONTWRITEBYTECODE", "1"));
    }

    private static void assertNobodyCannotRead(Path file) throws Exception {
        Process cat = new ProcessBuilder(nobody("/bin/cat", file.toString()))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectErrorStream(true)
                .start();
        assertTrue(cat.waitFor(10, TimeUnit.SECONDS));
        assertNotEquals(0, cat.exitValue(), "nobody read " + file);
    }

    /** The test class path copied where {@code nobody} can read it (the local repository is private to root). */
    private static synchronized String classPathNobodyCanRead() throws IOException {
        if (readableClassPath == null) {
            Path dir = Files.createTempDirectory("tensorsocket-cp-");
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            int i = 0;
            for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                Path src = Path.of(entry);
                if (!Files.exists(src)) {
                    continue;
                }
                Path dst = dir.resolve(String.format("%03d-%s", i++, src.getFileName()));
                try (Stream<Path> s = Files.walk(src)) {
                    for (Path p : s.toList()) {
                        Path t = dst.resolve(src.relativize(p).toString());
                        if (Files.isDirectory(p)) {
                            Files.createDirectories(t);
                            Files.setPosixFilePermissions(t, PosixFilePermissions.fromString("rwxr-xr-x"));
                        } else {
                            Files.copy(p, t);
                            Files.setPosixFilePermissions(t, PosixFilePermissions.fromString("rw-r--r--"));
                        }
                    }
                }
            }
            readableClassPath = dir;
        }
        try (Stream<Path> s = Files.list(readableClassPath)) {
            return String.join(
                    File.pathSeparator, s.sorted().map(Path::toString).toList());
        }
    }

    @AfterAll
    static void removeClassPathCopy() throws IOException {
        if (readableClassPath != null) {
            try (Stream<Path> s = Files.walk(readableClassPath)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
