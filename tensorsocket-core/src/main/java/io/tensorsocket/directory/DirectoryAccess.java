package io.tensorsocket.directory;

import io.tensorsocket.PermissionDeniedException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.HashSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who may use a producer's directory (see {@link ProducerDirectory} for the tree and its modes): its owner, or the
 * members of the group its producer shares with. The per-user and producer directories a producer makes are 0700;
 * one left with other modes is put back, except a per-user directory a group-shared producer made passable (0711),
 * which still lists nothing; a parent the user chose is not policed.
 */
public final class DirectoryAccess {
    private static final Logger log = LoggerFactory.getLogger(DirectoryAccess.class);
    static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");
    static final Set<PosixFilePermission> PASSABLE_DIR = PosixFilePermissions.fromString("rwx--x--x");

    private DirectoryAccess() {}

    /**
     * Checks a directory a consumer is about to use: it must exist and belong to the current user.
     *
     * @throws PermissionDeniedException if another user owns it
     */
    public static void checkOwnedByCurrentUser(Path dir) throws IOException {
        UserPrincipal owner = Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS);
        String me = System.getProperty("user.name");
        if (!owner.getName().equals(me)) {
            throw new PermissionDeniedException(dir + " belongs to user '" + owner.getName() + "', not to '" + me
                    + "'; connect only to producers you started, or pass a directory of your own");
        }
    }

    /**
     * Checks a directory a consumer is about to use: it must belong to the current user, or be shared by
     * its owner's producer with a group the current user is in (group r-x, nothing for others), and its
     * control socket's path must fit a Unix-domain socket address.
     *
     * @throws IllegalArgumentException  if the socket path is too long (see {@link ProducerDirectory#checkSocketPathFits(Path)})
     * @throws PermissionDeniedException otherwise, saying who owns it and what would grant access
     */
    public static void checkAccessibleToCurrentUser(Path dir) throws IOException {
        ProducerDirectory.checkSocketPathFits(dir);
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        String me = System.getProperty("user.name");
        if (a.owner().getName().equals(me)) {
            return;
        }
        Set<PosixFilePermission> p = a.permissions();
        boolean groupShared = p.contains(PosixFilePermission.GROUP_READ)
                && p.contains(PosixFilePermission.GROUP_EXECUTE)
                && !p.contains(PosixFilePermission.OTHERS_READ)
                && !p.contains(PosixFilePermission.OTHERS_WRITE)
                && !p.contains(PosixFilePermission.OTHERS_EXECUTE);
        if (!groupShared) {
            throw new PermissionDeniedException(
                    dir + " belongs to user '" + a.owner().getName() + "', not to '" + me
                            + "', and is not shared with a group; connect only to producers you started, or ask the owner to"
                            + " start it with --group <a group you are in>");
        }
        Object gid = Files.getAttribute(dir, "unix:gid", LinkOption.NOFOLLOW_LINKS);
        if (!currentGroupIds().contains(((Number) gid).longValue())) {
            throw new PermissionDeniedException(
                    dir + " belongs to user '" + a.owner().getName() + "' and is shared with"
                            + " group '" + a.group().getName() + "', which '" + me
                            + "' is not in; ask to be added to it, or the owner"
                            + " to start the producer with --group <a group you are in>");
        }
    }

    /** The real, effective and supplementary group ids of this process (from /proc; empty where there is none). */
    private static Set<Long> currentGroupIds() {
        Set<Long> ids = new HashSet<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Gid:") || line.startsWith("Groups:")) {
                    for (String f : line.substring(line.indexOf(':') + 1).trim().split("\\s+")) {
                        if (!f.isEmpty()) {
                            ids.add(Long.parseLong(f));
                        }
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            log.debug("cannot read this process's groups: {}", e.toString());
        }
        return ids;
    }

    static void ensurePrivate(Path dir, boolean isProducerDir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
            } catch (FileAlreadyExistsException e) {
                // another producer created it at the same moment; the checks below still apply
            }
            return;
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(dir + " exists and is not a directory");
        }
        if (!isProducerDir && !dir.getFileName().toString().startsWith("tensorsocket-")) {
            return; // a parent the user chose (e.g. /tmp): not ours to police
        }
        checkOwnedByCurrentUser(dir);
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
        // A per-user directory left passable by a group-shared producer stays so: it still lists nothing.
        if (!perms.equals(PRIVATE_DIR) && (isProducerDir || !perms.equals(PASSABLE_DIR))) {
            Files.setPosixFilePermissions(dir, PRIVATE_DIR);
        }
    }
}
