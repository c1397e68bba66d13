package io.vivarium.api.spi;

import java.util.Optional;
import java.util.Set;

import io.vivarium.api.ExecResult;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A command that ran against a throwaway copy-on-write view of an instance's files, returned by
 * {@link ScratchRuns#run}. Core compares {@link #before()} and {@link #after()} to report the
 * changes, then closes it, which discards every effect of the command.
 */
@ConsumerType
public interface ScratchRun extends AutoCloseable {

    ExecResult result();

    /** The files as they were before the command; unchanged by it. */
    HostFiles before();

    /** The files as the command left them; valid until {@link #close()}. */
    HostFiles after();

    /**
     * Sandbox paths (files or directories) that may differ between the two views, when the
     * mechanism knows them (an overlay's upper layer does); empty when everything must be compared.
     */
    Optional<Set<String>> touched();

    /** How the effects are discarded, reported as {@code reverted_via}: {@code overlay}, {@code workspace-copy}. */
    String mechanism();

    /**
     * Discards the command's effects and ends every process it left behind. Throws
     * {@link io.vivarium.api.ApiException} if that failed, in which case the effects may remain.
     */
    @Override
    void close();
}
