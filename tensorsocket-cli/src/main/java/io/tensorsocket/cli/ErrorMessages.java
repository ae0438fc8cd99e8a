package io.tensorsocket.cli;

import io.tensorsocket.TensorSocketException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.regex.Matcher;

/** Turns a failure into the one sentence the command line prints: never a Java class name. */
final class ErrorMessages {
    private ErrorMessages() {}

    static String of(Throwable e) {
        return withLauncher(sentence(e));
    }

    /**
     * Commands the library's messages suggest ({@code tensorsocket serve ...}, {@code tensorsocket clean}) as
     * the user can type them: with the launcher's path where it is not on PATH.
     */
    static String withLauncher(String m) {
        return withLauncher(m, Hints.launcher());
    }

    static String withLauncher(String m, String launcher) {
        if (launcher.equals("tensorsocket")) {
            return m;
        }
        // not where the message names a path already (".../bin/tensorsocket serve")
        return m.replaceAll(
                "(?<![/\\w.-])tensorsocket (?=(serve|clean|status|list)\\b)", Matcher.quoteReplacement(launcher + " "));
    }

    private static String sentence(Throwable e) {
        if (e instanceof UncheckedIOException u
                && u.getCause() != null
                && (u.getMessage() == null || u.getMessage().equals(u.getCause().toString()))) {
            return sentence(u.getCause());
        }
        if (e instanceof FileSystemException f) {
            return file(f);
        }
        if (e instanceof TensorSocketException
                || e instanceof IllegalArgumentException
                || e instanceof IllegalStateException
                || e instanceof IOException
                || e instanceof UncheckedIOException) {
            String m = e.getMessage();
            if (m != null && !m.isBlank() && !m.equals(String.valueOf(e.getCause()))) {
                return m;
            }
        }
        if (e.getCause() != null && e.getCause() != e) {
            return sentence(e.getCause());
        }
        String m = e.getMessage();
        return "unexpected failure" + (m == null || m.isBlank() ? "" : ": " + m)
                + "; run again with TENSORSOCKET_JAVA_OPTS=-Dtensorsocket.debug=true to see where it happened";
    }

    private static String file(FileSystemException f) {
        String path = f.getFile() == null ? "" : f.getFile();
        String other = f.getOtherFile() == null ? "" : " (and " + f.getOtherFile() + ")";
        if (f.getReason() != null) {
            return path + other + ": " + f.getReason();
        }
        String what = switch (f) {
            case NoSuchFileException x -> "no such file or directory";
            case AccessDeniedException x -> "permission denied";
            case NotDirectoryException x -> "not a directory";
            case FileAlreadyExistsException x -> "already exists";
            case DirectoryNotEmptyException x -> "directory not empty";
            default -> "cannot be used";
        };
        return path + other + ": " + what;
    }
}
