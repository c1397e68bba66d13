package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SnapshotInfo;

/**
 * What core persists about a snapshot (the state store's {@code snapshots} collection); no host
 * path: the image is in {@code snapshots/<tenant>/<tag>/image/} under the state directory.
 *
 * @param schema {@value #SCHEMA}
 * @param status {@link SnapshotInfo#WRITING}, {@link SnapshotInfo#READY} or {@link SnapshotInfo#FAILED}
 * @param warning why it failed, or null
 * @param parentTag the snapshot it was compacted from, or whose child it was branched from; null for a base
 * @param builder the id of the sandbox a build booted to capture, while it is written; null otherwise
 * @param artifacts what the image holds, as its storage strategy wrote it
 * @param copy a copy received from the node that holds the tag ({@link ImageCopies}): standalone, and
 *        removed, not failed, when a crash cut its transfer short
 * @param network the network of the sandbox it was branched from (its forks' children get it), or null
 *        for a build and in records written before networks (the operator's default)
 * @param template the template the sandbox it was branched from was made from, or null: its children
 *        are that template's sandboxes, and the template cannot be deleted while it exists
 * @param root that sandbox's root (the template's image), which its children run on; null without a template
 */
record SnapshotRecord(int schema, String tenant, String tag, String backend, long createdAtUnix, String branchedFrom,
        Long pauseMs, String status, String warning, String captures, String parentTag, String builder,
        List<Artifact> artifacts, boolean copy, NetworkPolicy network, String template, TemplateRoot root) {

    static final int SCHEMA = 1;

    /**
     * @param kind the artifact kind
     * @param file its name in the image directory
     * @param mode how it was written ({@code reflink}, {@code copy}, ...)
     * @param bytesWritten what the host really wrote for it
     */
    record Artifact(String kind, String file, String mode, long bytesWritten) {
    }

    static SnapshotRecord writing(String tenant, String tag, String backend, long now, String branchedFrom,
            String parentTag, NetworkPolicy network) {
        return writing(tenant, tag, backend, now, branchedFrom, parentTag, network, null, null);
    }

    /** A branch of a sandbox made from {@code template}, whose children run on its {@code root}. */
    static SnapshotRecord writing(String tenant, String tag, String backend, long now, String branchedFrom,
            String parentTag, NetworkPolicy network, String template, TemplateRoot root) {
        return new SnapshotRecord(SCHEMA, tenant, tag, backend, now, branchedFrom, null, SnapshotInfo.WRITING, null, null,
                parentTag, null, List.of(), false, network, template, root);
    }

    /** The reservation of a copy of {@code theirs}, received from the node that holds it: no parent, no builder. */
    static SnapshotRecord copyOf(SnapshotRecord theirs) {
        return new SnapshotRecord(SCHEMA, theirs.tenant, theirs.tag, theirs.backend, theirs.createdAtUnix, theirs.branchedFrom,
                null, SnapshotInfo.WRITING, null, null, null, null, List.of(), true, theirs.network, theirs.template, theirs.root);
    }

    /** This reservation with its builder sandbox and the network it was given, which its children get. */
    SnapshotRecord withBuilder(String sandboxId, NetworkPolicy builderNetwork) {
        return new SnapshotRecord(schema, tenant, tag, backend, createdAtUnix, branchedFrom, pauseMs, status, warning,
                captures, parentTag, sandboxId, artifacts, copy, builderNetwork, template, root);
    }

    SnapshotRecord ready(String what, Long pause, List<Artifact> made) {
        return new SnapshotRecord(schema, tenant, tag, backend, createdAtUnix, branchedFrom, pause, SnapshotInfo.READY,
                null, what, parentTag, null, List.copyOf(made), copy, network, template, root);
    }

    /** The record of a dependent whose parent is deleted with {@code ?force=true}. */
    SnapshotRecord orphaned() {
        return new SnapshotRecord(schema, tenant, tag, backend, createdAtUnix, branchedFrom, pauseMs, status, warning,
                captures, null, builder, artifacts, copy, network, template, root);
    }

    SnapshotRecord failed(String why) {
        return new SnapshotRecord(schema, tenant, tag, backend, createdAtUnix, branchedFrom, pauseMs, SnapshotInfo.FAILED,
                why, captures, parentTag, builder, artifacts, copy, network, template, root);
    }
}
