package io.vivarium.api.spi;

import java.util.Optional;

import io.vivarium.api.Progress;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Turns an OCI image into a {@link RootImage} (docs/templates.md): pulls it without a container
 * engine, verifies its digests, refuses layers with entries that leave the root, device nodes or
 * absurd sizes, unpacks it and keeps the result by digest, shared by every template of the image.
 * A service of its own, from an images bundle ({@code images-oci}), for templates. Since 2.12.
 */
@ConsumerType
public interface RootImages {

    /** Steps {@link #pull} reports: layers pulled and checked. */
    String LAYERS = "layers";
    /** Steps {@link #pull} reports: MiB of layers pulled. */
    String MIB = "MiB";

    /**
     * Why this host cannot pull images (a tool missing), or empty when it can; asked before every
     * pull, which is a 503 with it.
     */
    Optional<String> unavailable();

    /**
     * Checks that {@code reference} is written as {@link #pull} takes it, without reaching it:
     * a malformed one is a 400 {@link io.vivarium.api.ApiException} saying how to write it.
     */
    void checkReference(String reference);

    /**
     * The image {@code reference} names, pulled and unpacked unless it is cached, telling
     * {@code progress} the {@value #LAYERS} and {@value #MIB} done as it goes. Blocking, for minutes
     * maybe. Leaves nothing half-made behind on any failure, which it throws as an
     * {@link io.vivarium.api.ApiException}: 400 for a reference that is malformed, 422 for an
     * image it refuses (a bad digest, an unsupported media type, an entry out of bounds), 502
     * for a registry that cannot be reached or refuses, 507 when the disk is full.
     *
     * @param reference skopeo's transport syntax: {@code docker://}, {@code oci:} or {@code docker-archive:}
     */
    RootImage pull(String reference, Progress progress);

    /** Deletes the unpacked image of {@code digest}, which no template names any more; nothing if it is not there. */
    void remove(String digest);
}
