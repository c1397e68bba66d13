package io.vivarium.api;

import java.util.List;

/**
 * A background command ({@link CommandService}).
 *
 * @param id its id within the sandbox ({@code cmd-} and 12 hex digits)
 * @param sandboxId the sandbox it runs in
 * @param args its argv
 * @param status {@value #RUNNING}, {@value #EXITED} or {@value #LOST} (the sandbox stopped answering
 *        or was deleted while it ran: its output up to then is kept)
 * @param exitCode once exited: its status, 128+N when killed by signal N; null before
 * @param timedOut its timeout expired and its process group was killed
 * @param truncated a stream passed the output cap; the rest of it was discarded
 * @param outputBytes the bytes of its log so far (stdout and stderr)
 * @param startedAtUnix when it started, seconds since the epoch
 * @param durationMs how long it ran (or has run)
 * @param error why it was lost, or null
 * @param terminal it runs on a terminal ({@link CommandService#startTerminal}; since 2.4)
 */
public record CommandInfo(String id, String sandboxId, List<String> args, String status, Integer exitCode,
        boolean timedOut, boolean truncated, long outputBytes, long startedAtUnix, long durationMs, String error,
        boolean terminal) {

    public static final String RUNNING = "running";
    public static final String EXITED = "exited";
    public static final String LOST = "lost";

    /** A command without a terminal (the constructor of 2.2). */
    public CommandInfo(String id, String sandboxId, List<String> args, String status, Integer exitCode, boolean timedOut,
            boolean truncated, long outputBytes, long startedAtUnix, long durationMs, String error) {
        this(id, sandboxId, args, status, exitCode, timedOut, truncated, outputBytes, startedAtUnix, durationMs, error, false);
    }

    public boolean ended() {
        return !RUNNING.equals(status);
    }
}
