package com.example.vivarium.echo;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.GuestChannel;

/**
 * Runs a command as a host process in the instance's directory, which stands for {@code /work}.
 * Stateless apart from that directory, so execs may run concurrently (the contract of
 * {@link GuestChannel}). Core has filled in and validated every field of the request.
 */
final class LocalChannel implements GuestChannel {

    static final String WORKSPACE = "/work";
    /** How long to keep reading after the command exits: a background child may hold its stdout open. */
    private static final long OUTPUT_GRACE_MILLIS = 200;

    private final Path work;

    LocalChannel(Path work) {
        this.work = work;
    }

    @Override
    public PingResult ping() {
        long start = System.nanoTime();
        if (!Files.isDirectory(work)) {
            throw new ApiException(503, "the sandbox directory " + work + " is gone");
        }
        return new PingResult(true, 0, (System.nanoTime() - start) / 1e6);
    }

    @Override
    public ExecResult exec(ExecRequest request) {
        ProcessBuilder builder = new ProcessBuilder(request.args()).directory(toHost("cwd", request.cwd()).toFile());
        builder.environment().clear();
        request.env().forEach((k, v) -> builder.environment().put(k,
                k.equals("HOME") && v.startsWith(WORKSPACE) ? toHost("HOME", v).toString() : v));
        long start = System.nanoTime();
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            return new ExecResult("", "cannot start " + request.args().get(0) + ": " + e.getMessage() + "\n", -1,
                    false, false, 0);
        }
        Capture out = new Capture(process.getInputStream(), request.maxOutputBytes());
        Capture err = new Capture(process.getErrorStream(), request.maxOutputBytes());
        feed(process.getOutputStream(), request.stdin());
        boolean timedOut;
        try {
            timedOut = !process.waitFor(request.timeoutSecs(), TimeUnit.SECONDS);
            if (timedOut) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor();
            }
            long deadline = System.currentTimeMillis() + OUTPUT_GRACE_MILLIS;
            out.thread.join(Math.max(1, deadline - System.currentTimeMillis()));
            err.thread.join(Math.max(1, deadline - System.currentTimeMillis()));
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw ApiException.internal("interrupted while running " + request.args().get(0), e);
        }
        long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        // exitValue() is 128+N for a process killed by signal N, as ExecResult wants
        return new ExecResult(out.text(), err.text(), process.exitValue(), timedOut, out.truncated() || err.truncated(),
                durationMs);
    }

    /** Maps {@code /work} and paths below it to the instance's directory; nothing else exists here. */
    private Path toHost(String what, String sandboxPath) {
        Path p = Path.of(sandboxPath).normalize();
        Path root = Path.of(WORKSPACE);
        if (!p.startsWith(root)) {
            throw ApiException.badRequest(what + " must be " + WORKSPACE + " or below it in an example-local sandbox, got "
                    + sandboxPath);
        }
        return work.resolve(root.relativize(p).toString());
    }

    private static void feed(OutputStream stdin, String text) {
        byte[] bytes = text == null ? new byte[0] : text.getBytes(UTF_8);
        Thread.ofPlatform().daemon().name("example-local-stdin").start(() -> {
            try (stdin) {
                stdin.write(bytes);
            } catch (IOException e) {
                // the command exited or closed its stdin before reading everything
            }
        });
    }

    /** Keeps the first {@code cap} bytes of a stream, drains and counts the rest, on its own thread. */
    private static final class Capture {
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
        private final int cap;
        private final Thread thread;
        private boolean truncated;
        private boolean closed;

        Capture(InputStream in, int cap) {
            this.cap = cap;
            this.thread = Thread.ofPlatform().daemon().name("example-local-output").start(() -> drain(in));
        }

        private void drain(InputStream in) {
            byte[] buffer = new byte[8192];
            try (in) {
                for (int n; (n = in.read(buffer)) != -1; ) {
                    keep(buffer, n);
                }
            } catch (IOException e) {
                // closed under us: nothing more to capture
            }
        }

        private synchronized void keep(byte[] buffer, int n) {
            if (closed) {
                return; // exec has returned; a background child's output is discarded
            }
            int take = Math.min(n, cap - kept.size());
            kept.write(buffer, 0, take);
            truncated |= take < n;
        }

        synchronized String text() {
            closed = true;
            return kept.toString(UTF_8);
        }

        synchronized boolean truncated() {
            return truncated;
        }
    }
}
