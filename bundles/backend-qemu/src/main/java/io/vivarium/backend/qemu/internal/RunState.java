package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import io.vivarium.api.spi.OperationContext;

import java.io.IOException;
import java.time.Duration;

/** QEMU's run state through the monitor, and what it takes to leave {@code shutdown} (a powered-off guest). */
final class RunState {

    static final String SHUT_DOWN = "shutdown";
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final long POLL_MILLIS = 10;

    private RunState() {
    }

    static String of(QmpClient qmp) throws IOException {
        return qmp.execute("query-status", null, TIMEOUT).path("status").asText();
    }

    /** What runs while the reboot action is {@code reset}. */
    interface Step {
        void run() throws IOException;
    }

    /**
     * A guest that powered off (QEMU kept by {@code -no-shutdown}) cannot be continued until it is
     * reset, which {@code -no-reboot} turns into another shutdown: so the reboot action is
     * {@code reset} while this resets it and runs {@code then}, and {@code shutdown} again after.
     * QEMU's main loop carries the reset out later, so it is awaited before {@code then}: a load or
     * a {@code cont} before it would be undone by it.
     */
    static void resetOutOfShutdown(QmpClient qmp, OperationContext context, Step then) throws IOException {
        qmp.execute("set-action", JsonNodeFactory.instance.objectNode().put("reboot", "reset"), TIMEOUT);
        try {
            qmp.execute("system_reset", null, TIMEOUT);
            while (SHUT_DOWN.equals(of(qmp))) {
                context.checkpoint("resetting the powered-off guest");
                try {
                    Thread.sleep(POLL_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while resetting the powered-off guest", e);
                }
            }
            then.run();
        } finally {
            qmp.execute("set-action", JsonNodeFactory.instance.objectNode().put("reboot", "shutdown"), TIMEOUT);
        }
    }

    /** Runs the guest unless it already runs. */
    static void cont(QmpClient qmp) throws IOException {
        if (!"running".equals(of(qmp))) {
            qmp.execute("cont", null, TIMEOUT);
        }
    }
}
