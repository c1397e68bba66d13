package io.vivarium.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TreeSet;

import io.vivarium.api.ApiException;

/** The rules for directories a caller names inside a sandbox: checked once, before any use. */
final class SandboxPaths {
    static final int MAX_PATHS = 64;
    static final int MAX_PATH_BYTES = 4096;

    private SandboxPaths() {
    }

    /** Validated, normalised (no trailing or doubled slashes), de-duplicated and sorted. */
    static List<String> check(List<String> paths) {
        if (paths == null || paths.isEmpty()) {
            throw ApiException.badRequest("paths is required: a non-empty array of absolute directories, e.g. [\"/work\"]");
        }
        if (paths.size() > MAX_PATHS) {
            throw ApiException.badRequest("paths has " + paths.size() + " entries; at most " + MAX_PATHS);
        }
        TreeSet<String> out = new TreeSet<>();
        for (String p : paths) {
            out.add(normalise(p));
        }
        return List.copyOf(out);
    }

    static String normalise(String p) {
        if (p == null) {
            throw ApiException.badRequest("paths must not contain null");
        }
        if (p.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw ApiException.badRequest("path is longer than " + MAX_PATH_BYTES + " bytes: " + p.substring(0, 64) + "...");
        }
        if (!p.startsWith("/")) {
            throw ApiException.badRequest("path must be absolute: \"" + p + "\"");
        }
        for (int i = 0; i < p.length(); i++) {
            char c = p.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                throw ApiException.badRequest("path must not contain control characters: " + escape(p));
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String segment : p.split("/")) {
            if (segment.isEmpty() || segment.equals(".")) {
                continue;
            }
            if (segment.equals("..")) {
                throw ApiException.badRequest("path must not contain '..': \"" + p + "\"");
            }
            sb.append('/').append(segment);
        }
        return sb.isEmpty() ? "/" : sb.toString();
    }

    /** True if {@code path} is {@code dir} or lies below it. */
    static boolean within(String path, String dir) {
        return path.equals(dir) || dir.equals("/") || path.startsWith(dir + "/");
    }

    private static String escape(String p) {
        StringBuilder sb = new StringBuilder("\"");
        p.codePoints().forEach(c -> sb.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", c) : Character.toString(c)));
        return sb.append('"').toString();
    }
}
