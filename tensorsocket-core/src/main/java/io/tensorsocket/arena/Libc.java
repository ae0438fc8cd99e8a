package io.tensorsocket.arena;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The C library functions the arena package calls, bound once through the foreign-function API; a
 * handle is null where this platform's C library lacks the function (callers then do without it). Those
 * that report through {@code errno} take a capture segment ({@link #captureState}) as first argument.
 */
final class Libc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;

    /** int open(const char *path, int flags), errno captured; without O_CREAT the variadic mode is not read. */
    static final MethodHandle OPEN = bind("open", FunctionDescriptor.of(INT, ValueLayout.ADDRESS, INT), true);
    /** int close(int fd). */
    static final MethodHandle CLOSE = bind("close", FunctionDescriptor.of(INT, INT), false);
    /** int posix_fallocate(int fd, off_t offset, off_t len): returns the error number, sets no errno. */
    static final MethodHandle FALLOCATE = bind("posix_fallocate", FunctionDescriptor.of(INT, INT, LONG, LONG), false);
    /** void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset), errno captured. */
    static final MethodHandle MMAP = bind("mmap", FunctionDescriptor.of(LONG, LONG, LONG, INT, INT, INT, LONG), true);
    /** int munmap(void *addr, size_t length). */
    static final MethodHandle MUNMAP = bind("munmap", FunctionDescriptor.of(INT, LONG, LONG), false);
    /** int madvise(void *addr, size_t length, int advice), errno captured. */
    static final MethodHandle MADVISE = bind("madvise", FunctionDescriptor.of(INT, LONG, LONG, INT), true);
    /** void *memmove(void *dest, const void *src, size_t n). */
    static final MethodHandle MEMMOVE = bind(
            "memmove",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, LONG),
            false);

    private Libc() {}

    private static MethodHandle bind(String name, FunctionDescriptor descriptor, boolean errno) {
        try {
            return LINKER.defaultLookup()
                    .find(name)
                    .map(f -> errno
                            ? LINKER.downcallHandle(f, descriptor, Linker.Option.captureCallState("errno"))
                            : LINKER.downcallHandle(f, descriptor))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /** A segment for a call to capture its errno into, valid while {@code arena} is. */
    static MemorySegment captureState(Arena arena) {
        return arena.allocate(CAPTURE);
    }

    /** The errno the last call given {@code state} left there. */
    static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
