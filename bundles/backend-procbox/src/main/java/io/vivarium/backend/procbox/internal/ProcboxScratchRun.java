package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.ScratchRun;

import java.io.IOException;
import java.util.Optional;
import java.util.Set;

/** A dry-run's outcome; its scratch directory (overlay or copy) lives until {@link #close()}. */
final class ProcboxScratchRun implements ScratchRun {

    static final String OVERLAY = "overlay";
    static final String WORKSPACE_COPY = "workspace-copy";

    private final ExecResult result;
    private final HostFiles before;
    private final HostFiles after;
    private final Optional<Set<String>> touched;
    private final String mechanism;
    private final DryRunScratch scratch;
    private final HostTools tools;
    private boolean closed;

    ProcboxScratchRun(ExecResult result, HostFiles before, HostFiles after, Optional<Set<String>> touched,
            String mechanism, DryRunScratch scratch, HostTools tools) {
        this.result = result;
        this.before = before;
        this.after = after;
        this.touched = touched.map(Set::copyOf);
        this.mechanism = mechanism;
        this.scratch = scratch;
        this.tools = tools;
    }

    @Override
    public ExecResult result() {
        return result;
    }

    @Override
    public HostFiles before() {
        return before;
    }

    @Override
    public HostFiles after() {
        return after;
    }

    @Override
    public Optional<Set<String>> touched() {
        return touched;
    }

    @Override
    public String mechanism() {
        return mechanism;
    }

    /** Unmounts and removes the scratch directory; after a failure, calling it again retries. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            scratch.discard(tools);
        } catch (IOException | RuntimeException e) {
            throw new ApiException(500, "the dry-run's changes could not be discarded: " + e.getMessage(), null, e);
        }
        closed = true;
    }
}
