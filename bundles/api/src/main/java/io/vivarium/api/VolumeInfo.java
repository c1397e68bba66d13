package io.vivarium.api;

import java.util.List;

/**
 * What {@code GET /v1/volumes/{name}} returns ({@link VolumeService}). Since 2.7.
 *
 * @param name the volume's name, unique in its tenant
 * @param sizeMib its size: writing past it fails with ENOSPC inside the sandbox
 * @param createdAtUnix when it was made, seconds since the epoch
 * @param attachments the sandboxes it is mounted in now, writer first
 */
public record VolumeInfo(String name, int sizeMib, long createdAtUnix, List<Attachment> attachments) {
    public VolumeInfo {
        attachments = List.copyOf(attachments);
    }

    /** A sandbox the volume is mounted in, where, and how. */
    public record Attachment(String sandboxId, String mountPath, String subPath, boolean readOnly) {
    }
}
