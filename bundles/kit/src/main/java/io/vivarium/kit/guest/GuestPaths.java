package io.vivarium.kit.guest;

/** Checks on guest paths given by callers (they are only ever sent to the guest, never opened on the host). */
final class GuestPaths {
    private static final int MAX_PATH = 4096;

    private GuestPaths() {
    }

    static String requireAbsolute(String path, String what) {
        if (path == null || !path.startsWith("/") || path.length() > MAX_PATH || path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " must be an absolute path without NUL, at most " + MAX_PATH
                    + " characters");
        }
        return path;
    }

    /** An absolute path naming a file: not the root, not ending in {@code /}. */
    static String requireFile(String path) {
        requireAbsolute(path, "a guest file path");
        if (path.endsWith("/")) {
            throw new IllegalArgumentException("a guest file path must not end with '/': " + path);
        }
        return path;
    }
}
