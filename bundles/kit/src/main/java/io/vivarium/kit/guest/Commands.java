package io.vivarium.kit.guest;

import java.util.Set;

/** Names of the extension commands (PROTOCOL.md) and the limits the client holds the peer to. */
final class Commands {
    static final String EXEC = "vivarium-exec";
    static final String EXEC_POLL = "vivarium-exec-poll";
    static final String EXEC_KILL = "vivarium-exec-kill";
    static final String EXEC_WRITE = "vivarium-exec-write";
    static final String EXEC_RESIZE = "vivarium-exec-resize";
    static final String FILE_READ = "vivarium-file-read";
    static final String FILE_WRITE = "vivarium-file-write";
    static final String EVAL = "vivarium-eval";
    static final String LIST = "vivarium-list";
    /** The fingerprint modes {@value #LIST} computes (PROTOCOL.md); others are listed by their own command. */
    static final Set<String> LIST_MODES = Set.of("sha256", "stat");

    /** Our agent holds at most this much per stream between polls, and reads files in such chunks. */
    static final int AGENT_CHUNK = 1024 * 1024;
    /** The longest response line accepted for anything but a stock exec status. */
    static final int MAX_LINE = 8 * 1024 * 1024;
    /**
     * A stock {@code guest-exec-status} carries up to 16 MiB per stream as base64 (qemu-ga's own
     * cap), so its line may be this long; the client keeps only the caller's cap of it.
     */
    static final int MAX_STOCK_STATUS_LINE = 48 * 1024 * 1024;

    private Commands() {
    }
}
