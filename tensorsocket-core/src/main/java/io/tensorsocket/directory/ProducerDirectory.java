package io.tensorsocket.directory;

import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerAlreadyRunningException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a producer lives: a private directory holding its lock, control socket and arena.
 *
 * <pre>
 *  /dev/shm/tensorsocket-&lt;user&gt;/          0700, one per user (a temp directory where /dev/shm is missing)
 *   └── &lt;name&gt;/                           0700, one per producer
 *        ├── producer.lock                 0600, locked by the live producer; holds its pid
 *        ├── control.sock                  0600, Unix-domain socket consumers connect to
 *        ├── feeder.sock                   0600, only for an external source: where its feeder connects
 *        ├── arena                         0600, the shared memory (see ArenaLayout)
 *        ├── rings                         0600, descriptor rings and futex words (see DescriptorRings)
 *        └── failed                        only for a second after a producer failed before it served: why
 *                                          (UTF-8), for the consumers waiting for its socket
 * </pre>
 *
 * A producer started with an access group shares with that group only: the per-user directory becomes
 * 0711 (others may pass through it, not list it), the producer's directory 0750, the socket 0660 (connecting
 * needs write permission), the arena 0640 and the rings 0660 (a consumer writes how far it read), all owned
 * by the group.
 *
 * A producer that dies leaves the files behind but the operating system drops its lock, which is how
 * the next producer of the same name tells stale from live and reclaims the directory.
 */
public final class ProducerDirectory implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ProducerDirectory.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    public static final String LOCK_FILE = "producer.lock";
    public static final String SOCKET_FILE = "control.sock";
    public static final String ARENA_FILE = "arena";
    /** Lane {@code k}'s arena is {@code lane-k} ({@code io.tensorsocket.producer.Lane}), while the lane runs. */
    public static final String LANE_FILE_PREFIX = "lane-";
    /** Where consumers find their descriptor rings (see {@link io.tensorsocket.rings.DescriptorRings}). */
    public static final String RINGS_FILE = "rings";
    /** Where an external producer waits for its feeder (see {@code io.tensorsocket.external.ExternalSource}). */
    public static final String FEEDER_SOCKET_FILE = "feeder.sock";
    /** The draws of a producer that loads by index (see {@code io.tensorsocket.producer.DrawLog}): for resuming. */
    public static final String DRAWS_FILE = "draws";
    /** What a producer started for {@code TensorConsumer.connectOrServe} was started with (its serve arguments). */
    public static final String SHARE_FILE = "share";
    /**
     * Why a producer failed before it served, kept for {@link #FAILURE_NOTICE} before its directory goes, so that
     * consumers waiting for its socket (launched with it, as users do) fail with the cause instead of waiting out
     * their connect timeout.
     */
    public static final String FAILED_FILE = "failed";
    /** How long the directory of a producer that failed before it served keeps {@link #FAILED_FILE}. */
    public static final Duration FAILURE_NOTICE = Duration.ofSeconds(1);

    private static final Set<PosixFilePermission> GROUP_DIR = PosixFilePermissions.fromString("rwxr-x---");

    /**
     * Directories claimed by this JVM. POSIX record locks are per process and closing any descriptor of
     * the lock file drops them, so this JVM never opens a lock file it already holds.
     */
    private static final Set<Path> HELD = ConcurrentHashMap.newKeySet();

    private final Path dir;
    private final FileChannel lockChannel;
    private final FileLock lock;
    /** The group the producer shares with, or null for a private producer. */
    private GroupPrincipal group;

    private ProducerDirectory(Path dir, FileChannel lockChannel, FileLock lock) {
        this.dir = dir;
        this.lockChannel = lockChannel;
        this.lock = lock;
    }

    /** The per-user directory under which named producers live. */
    public static Path baseDirectory() {
        String override = System.getProperty("tensorsocket.base");
        if (override == null) {
            override = System.getenv("TENSORSOCKET_BASE");
        }
        if (override != null && !override.isBlank()) {
            return Path.of(override);
        }
        Path shm = Path.of("/dev/shm");
        Path root = Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
        return root.resolve("tensorsocket-" + System.getProperty("user.name"));
    }

    /** The directory of the producer called {@code name}. */
    public static Path forName(String name) {
        checkName(name);
        Path dir = baseDirectory().resolve(name);
        checkSocketPathFits(dir);
        return dir;
    }

    /**
     * Longest path, in bytes, a Unix-domain socket address holds on Linux: {@code sun_path} is 108 bytes
     * including the terminating NUL.
     */
    public static final int MAX_SOCKET_PATH_BYTES = 107;

    /**
     * Checks that the control socket of the producer in {@code dir} has a path short enough for a
     * Unix-domain socket address, so both sides fail early with the numbers instead of at bind or connect.
     *
     * @throws IllegalArgumentException naming the path, its length, the limit and what to shorten
     */
    public static void checkSocketPathFits(Path dir) {
        String socket = dir.resolve(SOCKET_FILE).toString();
        int bytes = socket.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_SOCKET_PATH_BYTES) {
            throw new IllegalArgumentException("Unix domain path too long: the control socket " + socket + " is "
                    + bytes
                    + " bytes, and a Unix-domain socket path holds at most " + MAX_SOCKET_PATH_BYTES
                    + "; shorten it by "
                    + (bytes - MAX_SOCKET_PATH_BYTES) + " bytes with a shorter producer name (--name) or a shorter base"
                    + " directory (TENSORSOCKET_BASE, now " + baseDirectory() + ")");
        }
    }

    /**
     * Checks a producer name: 1 to 64 letters, digits, '.', '_' or '-', not starting with '.', '_' or '-'.
     */
    public static void checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("invalid producer name '" + name
                    + "': use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
    }

    /**
     * Claims {@code dir} for a new producer: creates it (0700) if needed, refuses one owned by another
     * user or held by a live producer, and removes what a dead producer left there.
     */
    public static ProducerDirectory claim(Path dir) throws IOException {
        return claim(dir, null);
    }

    /**
     * Claims {@code dir} like {@link #claim(Path)}; with a non-null {@code accessGroup}, the directory is
     * shared with that group (see the class comment) and {@link #share(Path, boolean)} shares files in it.
     *
     * @throws IllegalArgumentException if no such group exists
     */
    public static ProducerDirectory claim(Path dir, String accessGroup) throws IOException {
        dir = dir.toAbsolutePath().normalize();
        GroupPrincipal group = null;
        if (accessGroup != null) {
            try {
                group = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(accessGroup);
            } catch (UserPrincipalNotFoundException e) {
                throw new IllegalArgumentException("no group named '" + accessGroup + "' on this host");
            }
        }
        DirectoryAccess.ensurePrivate(dir.getParent(), false);
        DirectoryAccess.ensurePrivate(dir, true);
        if (!HELD.add(dir)) {
            throw new ProducerAlreadyRunningException("a producer of this process already runs in " + dir
                    + "; close it, or choose another name or directory");
        }
        try {
            ProducerDirectory d = lock(dir);
            if (group != null) {
                try {
                    d.shareWith(group);
                } catch (IOException | RuntimeException e) {
                    d.close();
                    throw e;
                }
            }
            return d;
        } catch (IOException | RuntimeException e) {
            HELD.remove(dir);
            throw e;
        }
    }

    private void shareWith(GroupPrincipal g) throws IOException {
        Path parent = dir.getParent();
        if (parent.getFileName().toString().startsWith("tensorsocket-")) {
            Files.setPosixFilePermissions(parent, DirectoryAccess.PASSABLE_DIR);
        }
        try {
            Files.getFileAttributeView(dir, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                    .setGroup(g);
        } catch (FileSystemException e) {
            throw new PermissionDeniedException("cannot hand " + dir + " to group '" + g.getName() + "' ("
                    + e.getMessage() + "); choose a group you are a member of");
        }
        Files.setPosixFilePermissions(dir, GROUP_DIR);
        this.group = g;
    }

    /**
     * Shares a file of this directory with the access group, if there is one: group read (the arena) or
     * read and write (the socket, which a consumer must be able to write to connect). No-op otherwise.
     */
    public void share(Path file, boolean groupWrite) throws IOException {
        if (group == null) {
            return;
        }
        Files.getFileAttributeView(file, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                .setGroup(group);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(groupWrite ? "rw-rw----" : "rw-r-----"));
    }

    private static ProducerDirectory lock(Path dir) throws IOException {
        Path lockFile = dir.resolve(LOCK_FILE);
        FileChannel ch = FileChannel.open(
                lockFile,
                Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        FileLock lock;
        try {
            lock = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            String pid = readPid(ch);
            ch.close();
            throw new ProducerAlreadyRunningException("a producer is already running in " + dir + " (pid " + pid
                    + "); stop it, or choose another name or directory");
        }
        String stalePid = readPid(ch);
        boolean stale = Files.exists(dir.resolve(SOCKET_FILE)) || Files.exists(dir.resolve(ARENA_FILE));
        Files.deleteIfExists(dir.resolve(SOCKET_FILE));
        Files.deleteIfExists(dir.resolve(ARENA_FILE));
        Files.deleteIfExists(dir.resolve(RINGS_FILE));
        Files.deleteIfExists(dir.resolve(FEEDER_SOCKET_FILE));
        Files.deleteIfExists(dir.resolve(SHARE_FILE));
        Files.deleteIfExists(dir.resolve(DRAWS_FILE));
        deleteLanes(dir);
        if (stale) {
            log.info("reclaimed {} left behind by a producer that is no longer running (pid {})", dir, stalePid);
        }
        ch.truncate(0);
        ch.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
        ch.force(false);
        return new ProducerDirectory(dir, ch, lock);
    }

    private static String readPid(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(32);
        int n = ch.read(b, 0);
        return n <= 0 ? "unknown" : new String(b.array(), 0, n, StandardCharsets.US_ASCII).trim();
    }

    /** Names of producer directories under the base directory whose producer is alive. */
    public static List<String> liveProducers() {
        List<String> live = new ArrayList<>();
        Path base = baseDirectory();
        if (!Files.isDirectory(base)) {
            return live;
        }
        try (Stream<Path> s = Files.list(base)) {
            for (Path p : s.sorted().toList()) {
                if (Files.exists(p.resolve(SOCKET_FILE)) && isLocked(p)) {
                    live.add(p.getFileName().toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return live;
    }

    /** Whether a live producer holds {@code dir}'s lock. */
    public static boolean isLocked(Path dir) {
        if (HELD.contains(dir.toAbsolutePath().normalize())) {
            return true;
        }
        Path lockFile = dir.resolve(LOCK_FILE);
        if (!Files.exists(lockFile)) {
            return false;
        }
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            FileLock l = ch.tryLock();
            if (l == null) {
                return true;
            }
            l.release();
            return false;
        } catch (OverlappingFileLockException e) {
            return true; // held by this very JVM
        } catch (IOException e) {
            return false;
        }
    }

    public Path path() {
        return dir;
    }

    public Path socketPath() {
        return dir.resolve(SOCKET_FILE);
    }

    public Path arenaPath() {
        return dir.resolve(ARENA_FILE);
    }

    public Path ringsPath() {
        return dir.resolve(RINGS_FILE);
    }

    /**
     * Says why the producer failed before it served: writes {@link #FAILED_FILE} (whole, by a rename) and keeps
     * it for {@link #FAILURE_NOTICE}, for the consumers waiting for its socket. Call it just before {@link #close}.
     */
    public void failBeforeServing(String why) {
        try {
            Path written = Files.writeString(dir.resolve(FAILED_FILE + ".new"), why);
            Files.move(written, dir.resolve(FAILED_FILE), StandardCopyOption.ATOMIC_MOVE);
            Thread.sleep(FAILURE_NOTICE);
        } catch (IOException e) {
            log.debug("could not say why in {}: {}", dir, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Why the producer in {@code dir} failed before it served ({@link #FAILED_FILE}), or null. */
    public static String failureBeforeServing(Path dir) {
        try {
            return Files.readString(dir.resolve(FAILED_FILE));
        } catch (IOException e) {
            return null;
        }
    }

    /** Removes the arenas of lanes in {@code dir}. */
    private static void deleteLanes(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(f -> f.getFileName().toString().startsWith(LANE_FILE_PREFIX))
                    .toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Removes the producer's files and the directory, then drops the lock. */
    @Override
    public void close() {
        try {
            Files.deleteIfExists(socketPath());
            Files.deleteIfExists(arenaPath());
            Files.deleteIfExists(ringsPath());
            Files.deleteIfExists(dir.resolve(FEEDER_SOCKET_FILE));
            Files.deleteIfExists(dir.resolve(SHARE_FILE));
            Files.deleteIfExists(dir.resolve(DRAWS_FILE));
            deleteLanes(dir);
            Files.deleteIfExists(dir.resolve(FAILED_FILE));
            Files.deleteIfExists(dir.resolve(LOCK_FILE));
            lock.release();
            lockChannel.close();
            try {
                Files.deleteIfExists(dir);
            } catch (DirectoryNotEmptyException e) {
                log.debug("{} holds files of someone else; left in place", dir);
            }
        } catch (IOException e) {
            log.warn("could not remove {}: {}", dir, e.toString());
        } finally {
            HELD.remove(dir);
        }
    }
}
