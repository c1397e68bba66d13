package io.vivarium.backend.procbox.internal;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/**
 * The agent binary's {@code --launcher} mode ({@code guest-agent/src/launch.c}), one process kept
 * for the backend's life, that runs the detached launches ({@link SandboxCommands#launch}) the
 * backend would otherwise spawn one by one: a JVM's spawn reads its whole descriptor table (three
 * per live sandbox's agent connection) and execs a helper that execs the launch, a fifth of the
 * host's CPU in a burst of creates. Requests are one at a time; a launch detaches at once, so each
 * takes about a fork of a small process. Started on the first launch; after it dies, the next
 * launch starts another. Its stdin is the only way to it, and closing it (or the daemon's end) ends it.
 */
final class LaunchServer implements AutoCloseable {

    private final Path agentBinary;
    /** Guarded by this. */
    private boolean closed;
    private Process process;
    private OutputStream requests;
    private BufferedReader answers;

    LaunchServer(Path agentBinary) {
        this.agentBinary = agentBinary;
    }

    /**
     * Runs {@code argv} (the agent binary's detached {@code --launch} and its arguments) with stdin
     * from {@code /dev/null}, its output appended to {@code log}, in {@code /}, with only
     * {@code PATH} in its environment, and returns its exit status. Only detached launches: one
     * that did not return at once would hold up every other.
     *
     * @throws IOException if the server cannot be started or dies with the request: the launch may
     *         or may not have run
     */
    synchronized int launch(List<String> argv, Path log) throws IOException {
        if (argv.size() < 3 || !argv.get(0).equals(agentBinary.toString()) || !argv.get(1).equals(SandboxCommands.LAUNCH)
                || !argv.get(2).equals(SandboxCommands.DETACH)) {
            throw new IllegalArgumentException("not a detached launch of " + agentBinary + ": " + argv);
        }
        if (closed) {
            throw new IOException("the backend's launcher is closed");
        }
        byte[] request = request(argv, log);
        if (process == null || !process.isAlive()) {
            start();
        }
        try {
            requests.write(request);
            requests.flush();
            String answer = answers.readLine();
            if (answer == null) {
                throw new IOException("the launcher ended without answering (exit status "
                        + process.waitFor() + ")");
            }
            return Integer.parseInt(answer.strip());
        } catch (IOException | NumberFormatException e) {
            stop();
            throw e instanceof IOException io ? io : new IOException("the launcher answered " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop();
            throw new IOException("interrupted while the launcher ended", e);
        }
    }

    private static byte[] request(List<String> argv, Path log) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(1024);
        out.writeBytes(((argv.size() + 1) + "\n").getBytes(StandardCharsets.US_ASCII));
        terminated(out, log.toString());
        argv.forEach(arg -> terminated(out, arg));
        return out.toByteArray();
    }

    private static void terminated(ByteArrayOutputStream out, String s) {
        if (s.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("an argument holds a NUL: " + s);
        }
        out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
        out.write(0);
    }

    private void start() throws IOException {
        // each launch's directory, environment and stdio are the launcher's to set (launch.c)
        process = new ProcessBuilder(agentBinary.toString(), "--launcher").redirectError(Redirect.INHERIT).start();
        requests = process.getOutputStream();
        answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
    }

    private void stop() {
        if (process != null) {
            process.destroyForcibly();
            process = null;
        }
    }

    /** Closes the server's stdin, which ends it once a launch under way has been answered. */
    @Override
    public synchronized void close() {
        closed = true;
        if (process != null) {
            try {
                requests.close();
            } catch (IOException e) {
                process.destroyForcibly();
            }
            process = null;
        }
    }
}
