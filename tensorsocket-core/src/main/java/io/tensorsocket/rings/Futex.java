package io.tensorsocket.rings;

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
 * Linux futex wait and wake on a 32-bit word of a {@code MAP_SHARED} mapping, through {@code syscall(2)}
 * and the FFM API. The shared (not {@code _PRIVATE}) operations are used on purpose: the kernel then keys
 * the wait queue on the page of the mapped file, so a wake in one process reaches a waiter in another.
 *
 * <p>Words are passed by address, not as a segment of their mapping: a call then holds no scope of that
 * mapping, so a thread asleep here never keeps another thread from unmapping it.
 *
 * <p>One instance per thread: it keeps its timeout and errno buffers.
 */
public final class Futex {
    private static final long SYS_FUTEX = syscallNumber();
    private static final long FUTEX_WAIT = 0;
    private static final long FUTEX_WAKE = 1;
    public static final int EAGAIN = 11;
    public static final int EINTR = 4;
    public static final int ETIMEDOUT = 110;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    /** long syscall(long number, ...): number, uaddr, op, val, timeout, uaddr2, val3; every variadic as a full register. */
    private static final MethodHandle SYSCALL = SYS_FUTEX < 0
            ? null
            : LINKER.downcallHandle(
                    LINKER.defaultLookup().find("syscall").orElseThrow(),
                    FunctionDescriptor.of(
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG),
                    Linker.Option.firstVariadicArg(1),
                    Linker.Option.captureCallState("errno"));

    private final MemorySegment errno;
    /** struct timespec { long tv_sec; long tv_nsec; }, a relative timeout for FUTEX_WAIT. */
    private final MemorySegment timespec;

    /**
     * @throws UnsupportedOperationException where {@link #supported()} is false
     */
    public Futex() {
        if (!supported()) {
            throw new UnsupportedOperationException("futexes are used on Linux x86_64 and aarch64 only, not on "
                    + System.getProperty("os.name") + " " + System.getProperty("os.arch"));
        }
        Arena arena = Arena.ofAuto();
        this.errno = arena.allocate(CAPTURE);
        this.timespec = arena.allocate(16, 8);
    }

    /** Whether this platform has futexes this class can call (Linux on x86_64 or aarch64). */
    public static boolean supported() {
        return SYS_FUTEX >= 0;
    }

    private static long syscallNumber() {
        if (!System.getProperty("os.name", "").equals("Linux")) {
            return -1;
        }
        return switch (System.getProperty("os.arch", "")) {
            case "amd64", "x86_64" -> 202;
            case "aarch64" -> 98;
            default -> -1;
        };
    }

    /**
     * Sleeps while the 32-bit word at {@code address} holds {@code expected}, for at most {@code timeoutNanos}.
     *
     * @return 0 when woken (or spuriously), else the errno: {@link #EAGAIN} when the word already held
     *         another value, {@link #ETIMEDOUT}, or {@link #EINTR}
     */
    public int await(long address, int expected, long timeoutNanos) {
        timespec.set(ValueLayout.JAVA_LONG, 0, timeoutNanos / 1_000_000_000L);
        timespec.set(ValueLayout.JAVA_LONG, 8, timeoutNanos % 1_000_000_000L);
        long r = call(address, FUTEX_WAIT, expected & 0xFFFF_FFFFL, timespec);
        return r == 0 ? 0 : (int) ERRNO.get(errno, 0L);
    }

    /** Wakes up to {@code waiters} threads (of any process) sleeping on the word at {@code address}; returns how many. */
    public int wake(long address, int waiters) {
        long r = call(address, FUTEX_WAKE, waiters, MemorySegment.NULL);
        if (r < 0) {
            throw new IllegalStateException("FUTEX_WAKE failed, errno " + (int) ERRNO.get(errno, 0L));
        }
        return (int) r;
    }

    private long call(long address, long op, long val, MemorySegment timeout) {
        try {
            return (long) SYSCALL.invokeExact(errno, SYS_FUTEX, address, op, val, timeout, 0L, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("futex syscall failed", t);
        }
    }
}
