package io.tensorsocket.pipeline;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Decodes JPEG files with libjpeg-turbo's TurboJPEG C API (the 2.x {@code tj*} functions, which every
 * libturbojpeg since 1.4 exports, 3.x included), called through the FFM API; faster than ImageIO's bundled libjpeg
 * on the same files (docs/benchmarks.md, "The JPEG pipeline").
 *
 * <p>The library is looked up as {@value #LIBRARY} on the system library path (Debian/Ubuntu package
 * {@code libturbojpeg0}), or at the path in the system property {@value #PATH_PROPERTY}. Calling native
 * code is restricted: run java with {@code --enable-native-access=ALL-UNNAMED} (or the module's name).
 */
// Restricted FFM calls are this class's purpose; the JVM flag above is the user's opt-in.
@SuppressWarnings("restricted")
public final class TurboJpegDecoder implements ImageDecoder {
    public static final String LIBRARY = "libturbojpeg.so.0";
    public static final String PATH_PROPERTY = "tensorsocket.turbojpeg.path";

    private static final int TJPF_RGB = 0;
    private static final int TJERR_WARNING = 0;
    private static final int FLAGS = 0; // accurate integer IDCT and fancy upsampling: what PIL and ImageIO do

    private static final Object LOCK = new Object();
    private static TurboJpegDecoder instance;
    private static RuntimeException loadFailure;

    private final MethodHandle initDecompress;
    private final MethodHandle decompressHeader3;
    private final MethodHandle decompress2;
    private final MethodHandle destroy;
    private final MethodHandle getErrorStr2;
    private final MethodHandle getErrorCode;

    private TurboJpegDecoder(SymbolLookup lib) {
        Linker linker = Linker.nativeLinker();
        var ptr = ValueLayout.ADDRESS;
        var i32 = ValueLayout.JAVA_INT;
        var ulong = ValueLayout.JAVA_LONG; // unsigned long is 64-bit on LP64 Linux
        // Header parsing and error queries are short and never block: skip the thread-state transition.
        var quick = Linker.Option.critical(false);
        initDecompress = linker.downcallHandle(find(lib, "tjInitDecompress"), FunctionDescriptor.of(ptr));
        decompressHeader3 = linker.downcallHandle(
                find(lib, "tjDecompressHeader3"),
                FunctionDescriptor.of(i32, ptr, ptr, ulong, ptr, ptr, ptr, ptr),
                quick);
        decompress2 = linker.downcallHandle(
                find(lib, "tjDecompress2"), FunctionDescriptor.of(i32, ptr, ptr, ulong, ptr, i32, i32, i32, i32, i32));
        destroy = linker.downcallHandle(find(lib, "tjDestroy"), FunctionDescriptor.of(i32, ptr));
        getErrorStr2 = linker.downcallHandle(find(lib, "tjGetErrorStr2"), FunctionDescriptor.of(ptr, ptr), quick);
        getErrorCode = linker.downcallHandle(find(lib, "tjGetErrorCode"), FunctionDescriptor.of(i32, ptr), quick);
    }

    private static MemorySegment find(SymbolLookup lib, String name) {
        return lib.find(name)
                .orElseThrow(() -> new IllegalStateException("the TurboJPEG library has no symbol " + name
                        + "; install libjpeg-turbo 2.0 or newer (Debian/Ubuntu: apt-get install libturbojpeg0)"));
    }

    /**
     * The decoder, loading the library on first use.
     *
     * @throws IllegalStateException saying what to install if the library cannot be loaded
     */
    @SuppressWarnings("StaticAssignmentOfThrowable") // the one load failure, reported again on every later use
    public static TurboJpegDecoder load() {
        synchronized (LOCK) {
            if (instance == null && loadFailure == null) {
                String path = System.getProperty(PATH_PROPERTY);
                String what = path != null ? path : LIBRARY;
                try {
                    // Global arena: the library stays loaded for the life of the JVM, like any JNI library.
                    SymbolLookup lib = SymbolLookup.libraryLookup(what, Arena.global());
                    instance = new TurboJpegDecoder(lib);
                } catch (IllegalArgumentException | IllegalStateException | IllegalCallerException e) {
                    String hint = e instanceof IllegalCallerException
                            ? "; run java with --enable-native-access=ALL-UNNAMED"
                            : "; install it (Debian/Ubuntu: apt-get install libturbojpeg0) or set -D" + PATH_PROPERTY
                                    + "=/path/to/libturbojpeg.so";
                    loadFailure = new IllegalStateException(
                            "cannot load TurboJPEG from " + what + ": " + e.getMessage() + hint, e);
                }
            }
            if (loadFailure != null) {
                throw loadFailure;
            }
            return instance;
        }
    }

    /** Whether the library can be loaded here. */
    public static boolean isAvailable() {
        try {
            load();
            return true;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    @Override
    public String name() {
        return "turbojpeg";
    }

    @Override
    public Worker newWorker() {
        return new TurboWorker();
    }

    @Override
    public String toString() {
        return name();
    }

    private final class TurboWorker implements Worker {
        private final Arena arena = Arena.ofShared();
        private final MemorySegment width = arena.allocate(ValueLayout.JAVA_INT);
        private final MemorySegment height = arena.allocate(ValueLayout.JAVA_INT);
        private final MemorySegment subsamp = arena.allocate(ValueLayout.JAVA_INT);
        private final MemorySegment colorspace = arena.allocate(ValueLayout.JAVA_INT);
        private MemorySegment handle;

        TurboWorker() {
            try {
                handle = (MemorySegment) initDecompress.invokeExact();
            } catch (Throwable t) {
                arena.close();
                throw new IllegalStateException("tjInitDecompress failed: " + t, t);
            }
            if (handle.equals(MemorySegment.NULL)) {
                arena.close();
                throw new IllegalStateException(
                        "tjInitDecompress returned NULL (out of memory?); use the imageio decoder instead");
            }
        }

        @Override
        public void decode(MemorySegment encoded, RgbImage into) throws IOException {
            if (handle == null) {
                throw new IllegalStateException("decoder worker is closed");
            }
            try {
                width.set(ValueLayout.JAVA_INT, 0, 0);
                height.set(ValueLayout.JAVA_INT, 0, 0);
                int rc = (int) decompressHeader3.invokeExact(
                        handle, encoded, encoded.byteSize(), width, height, subsamp, colorspace);
                if (rc != 0) {
                    throw new IOException("not a JPEG TurboJPEG can read: " + error());
                }
                int w = width.get(ValueLayout.JAVA_INT, 0);
                int h = height.get(ValueLayout.JAVA_INT, 0);
                if (w < 1 || h < 1) {
                    throw new IOException("TurboJPEG read an empty image size (" + w + "x" + h
                            + ") from the header; the file is corrupt or truncated");
                }
                MemorySegment rgb = into.reset(w, h);
                rc = (int) decompress2.invokeExact(handle, encoded, encoded.byteSize(), rgb, w, 0, h, TJPF_RGB, FLAGS);
                // A warning (for example a truncated file) still yields an image, as ImageIO and PIL accept it.
                if (rc != 0 && (int) getErrorCode.invokeExact(handle) != TJERR_WARNING) {
                    throw new IOException("TurboJPEG cannot decode this JPEG: " + error());
                }
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("TurboJPEG call failed: " + t, t);
            }
        }

        private String error() throws Throwable {
            MemorySegment s = (MemorySegment) getErrorStr2.invokeExact(handle);
            return s.equals(MemorySegment.NULL)
                    ? "unknown error"
                    : s.reinterpret(Integer.MAX_VALUE).getString(0);
        }

        @Override
        public void close() {
            if (handle != null) {
                try {
                    int ignored = (int) destroy.invokeExact(handle);
                } catch (Throwable t) {
                    throw new IllegalStateException("tjDestroy failed: " + t, t);
                } finally {
                    handle = null;
                    arena.close();
                }
            }
        }
    }
}
