package io.vivarium.kit.guest;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.GuestLimits;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A command to run in the guest.
 *
 * @param argv the command and its arguments, never interpreted by a shell; {@code argv[0]} without
 *        a {@code /} is looked up in {@code PATH} of {@code env}
 * @param env the command's whole environment (nothing is inherited from the agent)
 * @param cwd working directory (absolute), or null for {@code /}
 * @param stdin bytes fed to standard input (empty: {@code /dev/null})
 * @param timeout wall-clock limit after which the command's process group is killed, or null for
 *        none (the call's deadline still bounds the wait)
 * @param maxOutputBytes bytes kept per stream; the rest is discarded and reported truncated
 * @param uid user to run as, or null for the agent's own; not supported by the stock agent
 * @param gid group to run as, or null
 */
public record ExecSpec(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Duration timeout,
        int maxOutputBytes, Integer uid, Integer gid) {

    /** The most output per stream a request may ask for (qemu-ga buffers no more). */
    public static final int MAX_OUTPUT_BYTES = (int) GuestLimits.DEFAULT.maxOutputBytes();

    public ExecSpec {
        argv = List.copyOf(argv);
        env = Map.copyOf(env);
        stdin = stdin == null ? new byte[0] : stdin.clone();
        if (argv.isEmpty()) {
            throw new IllegalArgumentException("argv is empty");
        }
        argv.forEach(arg -> requireNoNul(arg, "an argument"));
        env.forEach((key, value) -> {
            if (key.isEmpty() || key.indexOf('=') >= 0) {
                throw new IllegalArgumentException("environment variable name '" + key + "' is empty or has '='");
            }
            requireNoNul(key, "an environment variable name");
            requireNoNul(value, "an environment variable value");
        });
        if (cwd != null) {
            GuestPaths.requireAbsolute(cwd, "cwd");
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout must be positive");
        }
        if (maxOutputBytes < 0 || maxOutputBytes > MAX_OUTPUT_BYTES) {
            throw new IllegalArgumentException("maxOutputBytes must be in 0.." + MAX_OUTPUT_BYTES);
        }
        if (uid != null && uid < 0 || gid != null && gid < 0) {
            throw new IllegalArgumentException("uid and gid must not be negative");
        }
    }

    /** A command with an empty environment, no timeout and 1 MiB of output per stream. */
    public static ExecSpec of(String... argv) {
        return new ExecSpec(List.of(argv), Map.of(), null, null, null, 1024 * 1024, null, null);
    }

    /** The API's exec request, already filled in and validated by core. */
    public static ExecSpec from(ExecRequest request) {
        return new ExecSpec(request.args(), request.env(), request.cwd(),
                request.stdin() == null ? null : request.stdin().getBytes(StandardCharsets.UTF_8),
                Duration.ofSeconds(request.timeoutSecs()), request.maxOutputBytes(), null, null);
    }

    public ExecSpec withEnv(Map<String, String> newEnv) {
        return new ExecSpec(argv, newEnv, cwd, stdin, timeout, maxOutputBytes, uid, gid);
    }

    public ExecSpec withCwd(String newCwd) {
        return new ExecSpec(argv, env, newCwd, stdin, timeout, maxOutputBytes, uid, gid);
    }

    public ExecSpec withStdin(byte[] newStdin) {
        return new ExecSpec(argv, env, cwd, newStdin, timeout, maxOutputBytes, uid, gid);
    }

    public ExecSpec withTimeout(Duration newTimeout) {
        return new ExecSpec(argv, env, cwd, stdin, newTimeout, maxOutputBytes, uid, gid);
    }

    public ExecSpec withMaxOutputBytes(int newMax) {
        return new ExecSpec(argv, env, cwd, stdin, timeout, newMax, uid, gid);
    }

    public ExecSpec withUser(Integer newUid, Integer newGid) {
        return new ExecSpec(argv, env, cwd, stdin, timeout, maxOutputBytes, newUid, newGid);
    }

    @Override
    public byte[] stdin() {
        return stdin.clone();
    }

    private static void requireNoNul(String value, String what) {
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " contains a NUL character");
        }
    }
}
