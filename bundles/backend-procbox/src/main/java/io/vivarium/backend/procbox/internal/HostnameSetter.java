package io.vivarium.backend.procbox.internal;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A process started with a pooled sandbox that waits in its UTS namespace to give it the hostname
 * of the sandbox it is handed over as: only a process in that namespace may, and starting one at
 * the take (nsenter, then {@code hostname}) would cost as much as a bare bubblewrap spawn. It is the
 * agent's {@value SandboxCommands#SET_HOSTNAME}, a static binary that reads the name on its standard
 * input and sets it with no exec between (a shell that ran {@code hostname} then took 0.7 ms of
 * every create, a dynamically linked start-up). Nothing of the name reaches an argv; it runs in
 * the host's PID namespace, out of the sandbox's sight, and exits on end of input (the daemon's
 * death included) without changing anything.
 */
final class HostnameSetter implements AutoCloseable {

    private static final Pattern HOSTNAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
    private static final long WAIT_SECONDS = 5;

    private final Process process;

    private HostnameSetter(Process process) {
        this.process = process;
    }

    /** Starts the process for {@code sandbox}; its output goes to {@code log}. */
    static HostnameSetter start(SandboxCommands commands, ProcboxRecord sandbox, Path log) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(commands.settingHostname(sandbox))
                .directory(new File("/"))
                .redirectOutput(Redirect.appendTo(log.toFile()))
                .redirectErrorStream(true);
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/bin:/bin");
        return new HostnameSetter(builder.start());
    }

    /** Sets the hostname and waits for it to be set. */
    void set(String hostname) throws IOException {
        if (!HOSTNAME.matcher(hostname).matches()) {
            throw new IOException("not a hostname: " + hostname);
        }
        try (OutputStream in = process.getOutputStream()) {
            in.write((hostname + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        try {
            if (!process.waitFor(WAIT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("hostname did not exit within " + WAIT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new IOException("interrupted while setting the hostname", e);
        }
        if (process.exitValue() != 0) {
            throw new IOException("hostname exited with status " + process.exitValue() + " (see procbox.log)");
        }
    }

    /** Ends the process if it still waits. */
    @Override
    public void close() {
        process.destroyForcibly();
    }
}
