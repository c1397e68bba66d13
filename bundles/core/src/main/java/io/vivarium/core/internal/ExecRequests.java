package io.vivarium.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.GuestLimits;

/** Validates an exec request once, at the edge, and fills in the defaults backends rely on. */
final class ExecRequests {
    static final int DEFAULT_TIMEOUT_SECS = 30;
    static final int MAX_TIMEOUT_SECS = 3600;
    static final int DEFAULT_MAX_OUTPUT = 1 << 20;
    static final int MAX_MAX_OUTPUT = (int) GuestLimits.DEFAULT.maxOutputBytes();
    static final int MAX_ARGS = 4096;
    static final int MAX_PATH = 4096;

    private ExecRequests() {
    }

    static ExecRequest complete(ExecRequest r, String workspace) {
        return complete(r, workspace, null);
    }

    /**
     * {@link #complete(ExecRequest, String)} for a sandbox that runs on a template's {@code root}
     * (null for none): its env under the request's, and its workdir where the request names none.
     */
    static ExecRequest complete(ExecRequest r, String workspace, TemplateRoot root) {
        if (r.args() == null || r.args().isEmpty()) {
            throw ApiException.badRequest("args is required: a non-empty array of strings, e.g. [\"ls\", \"-l\"]");
        }
        if (r.args().size() > MAX_ARGS) {
            throw ApiException.badRequest("args has " + r.args().size() + " elements; at most " + MAX_ARGS);
        }
        List<String> args = List.copyOf(r.args().stream().map(a -> {
            if (a == null) {
                throw ApiException.badRequest("args must not contain null");
            }
            return noNul("args", a);
        }).toList());
        if (args.get(0).isEmpty()) {
            throw ApiException.badRequest("args[0] must name a program");
        }
        int timeout = r.timeoutSecs() == null ? DEFAULT_TIMEOUT_SECS : r.timeoutSecs();
        if (timeout < 1 || timeout > MAX_TIMEOUT_SECS) {
            throw ApiException.badRequest("timeout_secs must be between 1 and " + MAX_TIMEOUT_SECS + ", got " + timeout);
        }
        int maxOutput = r.maxOutputBytes() == null ? DEFAULT_MAX_OUTPUT : r.maxOutputBytes();
        if (maxOutput < 1 || maxOutput > MAX_MAX_OUTPUT) {
            throw ApiException.badRequest("max_output_bytes must be between 1 and " + MAX_MAX_OUTPUT + ", got " + maxOutput);
        }
        String cwd = r.cwd() != null ? noNul("cwd", r.cwd()) : root != null ? root.workdir() : workspace;
        if (!cwd.startsWith("/") || cwd.getBytes(StandardCharsets.UTF_8).length > MAX_PATH) {
            throw ApiException.badRequest("cwd must be an absolute path of at most " + MAX_PATH + " bytes, got \"" + cwd + "\"");
        }
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin");
        env.put("HOME", workspace);
        env.put("LANG", "C.UTF-8");
        if (root != null) {
            env.putAll(root.env());
        }
        if (r.env() != null) {
            r.env().forEach((k, v) -> {
                if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0) {
                    throw ApiException.badRequest("env name \"" + k + "\" is invalid: it must be non-empty, without '=' or NUL");
                }
                if (v == null) {
                    throw ApiException.badRequest("env value of " + k + " must be a string, got null");
                }
                env.put(k, noNul("env value of " + k, v));
            });
        }
        return new ExecRequest(args, timeout, Map.copyOf(env), cwd, r.stdin(), maxOutput);
    }

    private static String noNul(String what, String s) {
        if (s.indexOf('\0') >= 0) {
            throw ApiException.badRequest(what + " must not contain NUL characters");
        }
        return s;
    }
}
