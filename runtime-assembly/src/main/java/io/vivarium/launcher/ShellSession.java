package io.vivarium.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.CommandInfo;
import io.vivarium.api.TerminalSize;
import io.vivarium.client.Terminal;
import io.vivarium.client.VivariumClient;

/**
 * {@code vivarium sandbox shell ID [-- CMD...]}: a terminal in the sandbox on this one. When stdin
 * is a terminal it is put in raw mode (by {@code stty}, restored on the way out) and its size
 * follows this one's (SIGWINCH); when it is a pipe, what it carries is typed, then a Ctrl-D.
 */
final class ShellSession {
    /** What a terminal takes as the end of input. */
    private static final byte[] CTRL_D = {4};
    /** How long a command may run past its terminal's last output for the exit to arrive; a shell runs as long as it wants. */
    private static final Duration FOREVER = Duration.ofDays(365);

    private final VivariumClient vivarium;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean interactive = stdinIsATerminal();

    ShellSession(VivariumClient vivarium, PrintStream out, PrintStream err) {
        this.vivarium = vivarium;
        this.out = out;
        this.err = err;
    }

    /** Runs the terminal until its command ends; returns its exit code. */
    int run(String sandboxId, List<String> command) throws IOException {
        String saved = interactive ? stty("-g").trim() : null;
        try (Terminal t = vivarium.commands().terminal(sandboxId, command, size(), this::show,
                e -> err.print("\r\nvivarium: " + e + "\r\n"))) {
            if (interactive) {
                stty("raw", "-echo");
                followResizes(t);
            }
            Thread keys = Thread.ofPlatform().daemon().name("shell-keys").start(() -> type(System.in, t));
            CommandInfo ended = t.await(FOREVER);
            keys.interrupt();
            return ended.exitCode() == null ? 1 : ended.exitCode();
        } finally {
            if (saved != null) {
                stty(saved);
            }
        }
    }

    private synchronized void show(byte[] screen) {
        out.write(screen, 0, screen.length);
        out.flush();
    }

    /** This terminal's keys to the remote one; at the end of a pipe, a Ctrl-D. */
    private void type(InputStream in, Terminal t) {
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = in.read(buf)) > 0;) {
                t.type(Arrays.copyOf(buf, n));
            }
            t.type(CTRL_D);
        } catch (IOException | RuntimeException e) {
            // the terminal closed: its exit, or the failure, is reported by await
        }
    }

    /** The remote terminal takes this one's size whenever it changes (SIGWINCH). */
    private void followResizes(Terminal t) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("WINCH"), s -> {
                try {
                    t.resize(size());
                } catch (IOException | RuntimeException e) {
                    // the terminal is closing
                }
            });
        } catch (IllegalArgumentException noSuchSignal) {
            // not on Linux: the size stays as it started
        }
    }

    /** This terminal's size, or 24×80 when stdin is not one. */
    private TerminalSize size() throws IOException {
        if (!interactive) {
            return TerminalSize.DEFAULT;
        }
        String[] rowsCols = stty("size").trim().split("\\s+");
        try {
            return new TerminalSize(Integer.parseInt(rowsCols[0]), Integer.parseInt(rowsCols[1]));
        } catch (RuntimeException e) { // a terminal that says 0 0 (a serial line)
            return TerminalSize.DEFAULT;
        }
    }

    /** Whether stdin is a terminal: {@code stty} answers only on one. */
    private static boolean stdinIsATerminal() {
        try {
            Process p = new ProcessBuilder("stty", "-g").redirectInput(ProcessBuilder.Redirect.INHERIT)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Runs {@code stty} on stdin (a terminal); its output. */
    private static String stty(String... args) throws IOException {
        List<String> cmd = new java.util.ArrayList<>(List.of("stty"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.INHERIT)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String answer = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("stty " + String.join(" ", args) + " failed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running stty", e);
        }
        return answer;
    }
}
