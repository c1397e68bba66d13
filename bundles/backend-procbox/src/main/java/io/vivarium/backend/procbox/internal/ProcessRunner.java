package io.vivarium.backend.procbox.internal;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecResult;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.ProcessBuilder.Redirect;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a host command whose first program makes it a process-group leader ({@code setsid}),
 * with a fixed environment, stdin, a timeout that kills the whole group, and capped output.
 */
final class ProcessRunner {

    /**
     * How long to keep reading output after the command exits. A background process it started
     * may hold stdout open indefinitely; exec returns after this grace anyway.
     */
    private static final Duration OUTPUT_GRACE = Duration.ofMillis(200);
    private static final Duration KILL_WAIT = Duration.ofSeconds(5);
    private static final int SIGKILL_STATUS = 128 + 9;
    private static final String KILL = "/bin/kill";
    private static final File DEV_NULL = new File("/dev/null");

    private ProcessRunner() {
    }

    /**
     * What a command left: its output as bytes (files travel through it).
     *
     * @param complete both streams reached their end within the grace (no process kept them open)
     */
    record RawResult(byte[] stdout, byte[] stderr, int exitCode, boolean timedOut, boolean truncated,
            long durationMs, boolean complete) {
        ExecResult asText() {
            return new ExecResult(new String(stdout, UTF_8), new String(stderr, UTF_8), exitCode, timedOut, truncated,
                    durationMs);
        }
    }

    /** @param stdin bytes for standard input, or null for an empty one */
    static ExecResult run(List<String> argv, Map<String, String> env, String stdin, Duration timeout,
            int maxOutputBytes) {
        return runRaw(argv, env, stdin == null ? new byte[0] : stdin.getBytes(UTF_8), timeout, maxOutputBytes,
                OUTPUT_GRACE).asText();
    }

    /**
     * Like {@link #run}, with stdin and output as bytes, and {@code outputGrace} to read what is
     * left of the output once the command has exited.
     */
    static RawResult runRaw(List<String> argv, Map<String, String> env, byte[] input, Duration timeout,
            int maxOutputBytes, Duration outputGrace) {
        ProcessBuilder builder = new ProcessBuilder(argv).directory(new File("/"));
        builder.environment().clear();
        builder.environment().putAll(env);
        if (input.length == 0) {
            builder.redirectInput(Redirect.from(DEV_NULL));
        }
        long start = System.nanoTime();
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw ApiException.internal("cannot start " + argv.get(0) + ": " + e.getMessage(), e);
        }
        OutputPump stdout = OutputPump.start(process.getInputStream(), maxOutputBytes, "procbox-out-" + process.pid());
        OutputPump stderr = OutputPump.start(process.getErrorStream(), maxOutputBytes, "procbox-err-" + process.pid());
        if (input.length > 0) {
            feed(process, input);
        }
        boolean timedOut;
        boolean complete;
        long durationMs;
        try {
            timedOut = !process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS);
            if (timedOut) {
                killGroup(process);
                process.waitFor(KILL_WAIT.toNanos(), TimeUnit.NANOSECONDS);
            }
            durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            long outputDeadline = System.nanoTime() + outputGrace.toNanos();
            complete = stdout.awaitEof(outputDeadline) & stderr.awaitEof(outputDeadline);
        } catch (InterruptedException e) {
            killGroup(process);
            Thread.currentThread().interrupt();
            throw ApiException.internal("interrupted while running " + argv.get(0), e);
        }
        int exitCode = timedOut ? SIGKILL_STATUS : process.exitValue();
        return new RawResult(stdout.finish(), stderr.finish(), exitCode, timedOut,
                stdout.truncated() || stderr.truncated(), durationMs, complete);
    }

    private static void feed(Process process, byte[] input) {
        Thread.ofPlatform().daemon().name("procbox-stdin-" + process.pid()).start(() -> {
            try (OutputStream stdin = process.getOutputStream()) {
                stdin.write(input);
            } catch (IOException e) {
                // the command exited or closed stdin before reading all of it
            }
        });
    }

    /**
     * SIGKILLs the process group led by {@code process}, which holds the command and whatever it
     * started in the background; descendants that left the group are killed one by one.
     */
    private static void killGroup(Process process) {
        List<ProcessHandle> descendants = process.descendants().toList();
        try {
            Process kill = new ProcessBuilder(KILL, "-KILL", "--", "-" + process.pid())
                    .redirectInput(Redirect.from(DEV_NULL))
                    .redirectOutput(Redirect.DISCARD)
                    .redirectError(Redirect.DISCARD)
                    .start();
            kill.waitFor(KILL_WAIT.toNanos(), TimeUnit.NANOSECONDS);
        } catch (IOException e) {
            // the descendants below are the fallback
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        descendants.forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }
}
