package io.vivarium.core.internal;

/**
 * What core persists about a volume ({@code volume-records/<key>.json}); its file system is
 * {@code volumes/<key>.ext4} ({@link Volumes}).
 *
 * @param sizeMib the size it was made with
 */
record VolumeRecord(String tenant, String name, int sizeMib, long createdAtUnix) {
}
