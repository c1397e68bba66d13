package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.time.Instant;
import java.util.function.BooleanSupplier;

import io.vivarium.api.spi.OperationContext;

/** The context core gives a long backend call: a deadline, cancelled when core stops, progress logged. */
record CoreOperation(String what, Instant deadline, BooleanSupplier stopping) implements OperationContext {
    private static final System.Logger LOG = System.getLogger(CoreOperation.class.getName());

    @Override
    public boolean cancelled() {
        return stopping.getAsBoolean();
    }

    @Override
    public void progress(String step, double fraction) {
        LOG.log(Level.DEBUG, () -> what + ": " + step + (fraction >= 0 ? String.format(" (%.0f%%)", fraction * 100) : ""));
    }
}
