package io.vivarium.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The blocking waits of a test, each with a deadline: past it the test fails with what did not
 * happen, instead of hanging until the build's timeout kills the whole test JVM.
 */
public final class Bounded {
    private Bounded() {
    }

    /**
     * The value of {@code future} once it is done. A failure is rethrown as it was when unchecked,
     * else wrapped in a {@link CompletionException} (as {@code CompletableFuture.join} does).
     */
    public static <T> T get(Future<T> future, Duration within, String what) {
        try {
            return future.get(within.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(notWithin(within, what), e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof RuntimeException unchecked) {
                throw unchecked;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new CompletionException(cause);
        } catch (InterruptedException e) {
            throw interrupted(what, e);
        }
    }

    /** Waits until {@code thread} has ended. */
    public static void join(Thread thread, Duration within, String what) {
        try {
            if (!thread.join(within)) {
                AssertionError error = new AssertionError(notWithin(within, what));
                error.setStackTrace(thread.getStackTrace());
                throw error;
            }
        } catch (InterruptedException e) {
            throw interrupted(what, e);
        }
    }

    /** Waits until {@code latch} is open. */
    public static void await(CountDownLatch latch, Duration within, String what) {
        try {
            if (!latch.await(within.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new AssertionError(notWithin(within, what));
            }
        } catch (InterruptedException e) {
            throw interrupted(what, e);
        }
    }

    /** Waits until {@code condition} holds, looking again every 50 ms; fails with {@code what} past {@code within}. */
    public static void until(Duration within, String what, java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(notWithin(within, what));
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting until " + what, e);
            }
        }
    }

    /** The exit status of {@code process}; one that does not end in time is killed, and the test fails. */
    public static int waitFor(Process process, Duration within, String what) {
        try {
            if (!process.waitFor(within.toNanos(), TimeUnit.NANOSECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                throw new AssertionError(notWithin(within, what) + " (pid " + process.pid() + ", killed)");
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            throw interrupted(what, e);
        }
    }

    /** What a command printed (its output and error streams together) and its exit status. */
    public record Ran(int exitCode, String output) {
    }

    /**
     * Runs {@code argv} with its output and error streams to a temporary file, so that neither the
     * wait nor the read can outlast {@code within}.
     */
    public static Ran run(Duration within, String... argv) throws IOException {
        Path log = Files.createTempFile("vivarium-test-command", ".log");
        try {
            Process process = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            int status = waitFor(process, within, String.join(" ", argv));
            return new Ran(status, Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    private static String notWithin(Duration within, String what) {
        return "not within " + within.toMillis() / 1000.0 + " s: " + what;
    }

    private static AssertionError interrupted(String what, InterruptedException e) {
        Thread.currentThread().interrupt();
        return new AssertionError("interrupted while waiting: " + what, e);
    }
}
