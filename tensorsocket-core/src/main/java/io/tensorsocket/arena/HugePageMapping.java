package io.tensorsocket.arena;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Maps arena files at addresses aligned to 2 MiB, and backs them by 2 MiB pages unless asked not to
 * ({@link #requested()}): a copy of a batch into the arena then walks one page table entry per 2 MiB instead of
 * one per 4 KiB, making and pre-touching an arena faults once per 2 MiB (on this kind of virtual machine a
 * 300 MB arena is ready in a tenth of the time), and every Java process that maps the file reads it through the
 * same large pages.
 *
 * <pre>
 *   address space   reserved (PROT_NONE, size + 2 MiB); the file is mapped over it from its first 2 MiB
 *                   boundary on, and the unused ends are given back
 *   ──────────┬──────────┬──────────┬──────────┬─────┬──────────────┬──────────
 *   (unmapped)│ 2 MiB    │ 2 MiB    │ 2 MiB    │ ... │ tail (4 KiB) │(unmapped)
 *   ──────────┴──────────┴──────────┴──────────┴─────┴──────────────┴──────────
 *             ▲ file offset 0 at a multiple of 2 MiB: address and offset agree modulo 2 MiB
 * </pre>
 *
 * A file in {@code /dev/shm} (tmpfs, which distributions mount {@code huge=never}) is made of 4 KiB pages;
 * {@code madvise(MADV_COLLAPSE)} (Linux 6.1 and later) replaces them by 2 MiB pages whatever the mount says,
 * but only where the address and the file offset agree modulo 2 MiB, which an address the kernel picks
 * ({@link java.nio.channels.FileChannel#map}) rarely does. Every process that maps the file must map it so to
 * use the pages whole: a process that reads them through 4 KiB entries reads them more slowly (docs/benchmarks.md,
 * "Huge pages"). The Python client maps its slots the same way.
 *
 * <p>All of it is an optimisation: where the C library, the kernel or free memory refuses, arenas are mapped
 * the ordinary way, or keep their 4 KiB pages, and nothing else changes.
 */
public final class HugePageMapping {
    private static final Logger log = LoggerFactory.getLogger(HugePageMapping.class);
    static final long HUGE_PAGE = 2L << 20;
    private static final int PROT_NONE = 0;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_SHARED = 0x01;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_FIXED = 0x10;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MAP_NORESERVE = 0x4000;
    private static final int O_RDONLY = 0;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int MADV_HUGEPAGE = 14;
    private static final int MADV_COLLAPSE = 25;
    private static final long MAP_FAILED = -1L;
    /** The flag values above are Linux's (the same on x86_64 and aarch64). */
    private static final boolean LINUX = System.getProperty("os.name", "").equals("Linux");

    private static final Set<String> DECLINED = Set.of("0", "false", "no", "off");

    private HugePageMapping() {}

    /**
     * Whether this platform's C library gives what aligned mappings need; where it does, every arena is mapped
     * aligned, which costs nothing and lets the kernel map an arena's 2 MiB pages whole.
     */
    public static boolean available() {
        return LINUX
                && Libc.MMAP != null
                && Libc.MUNMAP != null
                && Libc.MADVISE != null
                && Libc.OPEN != null
                && Libc.CLOSE != null;
    }

    /**
     * Whether producers back their arenas by 2 MiB pages: yes, unless the environment variable
     * {@code TENSORSOCKET_HUGE_PAGES} is {@code 0} (or {@code false}, {@code no}, {@code off}), or this platform
     * cannot map aligned ({@link #available()}).
     */
    public static boolean requested() {
        return available()
                && !DECLINED.contains(
                        String.valueOf(System.getenv("TENSORSOCKET_HUGE_PAGES")).toLowerCase(Locale.ROOT));
    }

    /**
     * Maps the first {@code bytes} of {@code file} shared, readable and, if {@code writable}, writable, at an
     * address aligned to {@link #HUGE_PAGE}; the mapping lives until {@code scope} closes.
     *
     * @throws IOException if the file cannot be opened or mapped (its errno in the message)
     */
    static MemorySegment mapFile(Path file, long bytes, boolean writable, Arena scope) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment errno = Libc.captureState(a);
            int fd = (int) Libc.OPEN.invokeExact(
                    errno,
                    a.allocateFrom(file.toAbsolutePath().toString()),
                    (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
            if (fd < 0) {
                throw new IOException("could not open " + file + " (errno " + Libc.errno(errno) + ")");
            }
            try {
                long start = reserveAligned(errno, bytes, PROT_NONE, MAP_NORESERVE);
                if (start == MAP_FAILED) {
                    throw new IOException("could not reserve " + (bytes + HUGE_PAGE) + " bytes of address space for "
                            + file + " (errno " + Libc.errno(errno) + ")");
                }
                long mapped = (long) Libc.MMAP.invokeExact(
                        errno,
                        start,
                        bytes,
                        writable ? PROT_READ | PROT_WRITE : PROT_READ,
                        MAP_SHARED | MAP_FIXED,
                        fd,
                        0L);
                if (mapped != start) {
                    int err = Libc.errno(errno);
                    unmap(start, pagesEnd(start, bytes) - start);
                    throw new IOException("could not map " + file + " (errno " + err + ")");
                }
                return segment(start, bytes, scope);
            } finally {
                int ignored = (int) Libc.CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mapping " + file + " failed", t);
        }
    }

    /**
     * {@code bytes} of private anonymous memory at an address aligned to {@link #HUGE_PAGE}, asked to be backed by
     * huge pages ({@code MADV_HUGEPAGE}) if {@code hugePages}, for as long as {@code scope} is open: memory
     * like the arena's, to measure copies against.
     *
     * @throws OutOfMemoryError if the memory cannot be mapped (its errno in the message)
     */
    public static MemorySegment anonymous(long bytes, boolean hugePages, Arena scope) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment errno = Libc.captureState(a);
            long start = reserveAligned(errno, bytes, PROT_READ | PROT_WRITE, 0);
            if (start == MAP_FAILED) {
                throw new OutOfMemoryError(
                        "could not map " + (bytes + HUGE_PAGE) + " bytes (errno " + Libc.errno(errno) + ")");
            }
            if (hugePages) {
                int ignored =
                        (int) Libc.MADVISE.invokeExact(errno, start, pagesEnd(start, bytes) - start, MADV_HUGEPAGE);
            }
            return segment(start, bytes, scope);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mmap failed", t);
        }
    }

    /**
     * Maps private anonymous memory of {@code prot} (and {@code flags}) from a 2 MiB boundary on, for the
     * pages of {@code bytes}: maps 2 MiB more and gives back both ends. Returns the boundary, or
     * {@link #MAP_FAILED} with the errno in {@code errno}.
     */
    private static long reserveAligned(MemorySegment errno, long bytes, int prot, int flags) throws Throwable {
        long reserved = bytes + HUGE_PAGE;
        long base =
                (long) Libc.MMAP.invokeExact(errno, 0L, reserved, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0L);
        if (base == MAP_FAILED) {
            return MAP_FAILED;
        }
        long start = alignUp(base, HUGE_PAGE);
        long end = pagesEnd(start, bytes);
        unmap(base, start - base);
        unmap(end, base + reserved - end);
        return start;
    }

    /** The {@code bytes} at {@code start}, unmapped (whole pages) when {@code scope} closes. */
    private static MemorySegment segment(long start, long bytes, Arena scope) {
        long end = pagesEnd(start, bytes);
        return MemorySegment.ofAddress(start).reinterpret(bytes, scope, s -> unmap(start, end - start));
    }

    /** Where the 4 KiB pages that hold {@code bytes} from {@code start} end. */
    private static long pagesEnd(long start, long bytes) {
        return alignUp(start + bytes, ArenaLayout.PAGE);
    }

    /**
     * Asks the kernel to back the whole 2 MiB pages of {@code seg} (a mapping made by {@link #mapFile}) with
     * huge pages now; returns whether it did. It fails where the kernel is older than 6.1, where huge pages
     * are denied, or where no free 2 MiB of memory is at hand; the mapping keeps its 4 KiB pages then.
     * Each 2 MiB needs one of its pages present (the rest may be holes, which the 2 MiB page fills): a file
     * allocated whole would have its 4 KiB pages allocated only to be freed here, which on a virtual machine
     * that reports freed memory to its host costs a burst of the host's work and slow first touches after.
     */
    static boolean collapse(MemorySegment seg) {
        if (!available()) {
            return false;
        }
        long start = alignUp(seg.address(), HUGE_PAGE);
        long end = (seg.address() + seg.byteSize()) & -HUGE_PAGE;
        if (end <= start) {
            return false;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment errno = Libc.captureState(a);
            int r = (int) Libc.MADVISE.invokeExact(errno, start, end - start, MADV_COLLAPSE);
            if (r != 0) {
                log.debug(
                        "the arena keeps 4 KiB pages: madvise(MADV_COLLAPSE) failed with errno {}", Libc.errno(errno));
            }
            return r == 0;
        } catch (Throwable t) {
            log.debug("the arena keeps 4 KiB pages: madvise(MADV_COLLAPSE) could not be called", t);
            return false;
        }
    }

    private static void unmap(long address, long bytes) {
        if (bytes <= 0) {
            return;
        }
        try {
            int ignored = (int) Libc.MUNMAP.invokeExact(address, bytes);
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
    }

    private static long alignUp(long v, long to) {
        return (v + to - 1) & -to;
    }
}
