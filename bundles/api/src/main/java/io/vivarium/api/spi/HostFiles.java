package io.vivarium.api.spi;

import java.nio.file.Path;

/**
 * Where some of an instance's files live on the host, so core can list and fingerprint them
 * directly instead of through the guest channel (a process sandbox's workspace, say).
 *
 * @param hostDir the directory on the host
 * @param sandboxDir the same directory as the instance sees it, e.g. {@code /work}
 * @param uid the uid the instance's processes run as; files it cannot read are "unreadable"
 * @param gid their gid (no supplementary groups)
 */
public record HostFiles(Path hostDir, String sandboxDir, int uid, int gid) {
}
