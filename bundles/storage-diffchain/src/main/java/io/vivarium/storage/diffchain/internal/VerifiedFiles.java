package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

/**
 * What was learnt by reading a file whole (its hash, a checked header and index), remembered for as
 * long as the file is unchanged: keyed by its identity (device and inode) and valid for the
 * {@link Version} (size, modification and change time) it had when it was read. A write, a
 * truncation, a {@code touch} or a rename over it gives the next caller a new version, which is
 * read again. Callers that ask for one file at the same time share one reading: the first reads,
 * the others wait for its result, so forks of N hash each link once.
 *
 * <p>File times come from a clock that may be coarse (a kernel tick, or a second on some
 * filesystems), so a write in the same tick as the change before it can leave the version as it
 * was. As git does with its index ("racily clean" entries), a file changed less than
 * {@code racyWindow} before its reading began is read for the callers waiting then, but not
 * remembered: the next caller reads it again. The change time ({@code ctime}) is part of the
 * version because no caller can set it back.
 */
final class VerifiedFiles {

    /** The state of a file that its remembered result holds for. */
    record Version(Object fileKey, long size, FileTime modified, FileTime changed) {
    }

    /** Reads a file whole and returns what was learnt, or throws saying what is wrong with it. */
    @FunctionalInterface
    interface Reader<T> {
        T read(Path path) throws IOException;
    }

    private record Entry(Path path, Version version, CompletableFuture<Object> result) {
    }

    /**
     * Past this many remembered files, those deleted or changed since are dropped: core deletes a
     * snapshot's folder whole, not through the strategy. The next sweep waits until there are twice
     * as many as the last one left.
     */
    static final int SWEEP_ABOVE = 1024;

    private final Map<Object, Entry> byFile = new ConcurrentHashMap<>();
    private volatile int sweepAt = SWEEP_ABOVE;
    private final Duration racyWindow;

    VerifiedFiles(Duration racyWindow) {
        this.racyWindow = racyWindow;
    }

    static Version versionOf(Path path) throws IOException {
        Map<String, Object> a = Files.readAttributes(path, "unix:dev,ino,size,lastModifiedTime,ctime");
        return new Version(a.get("dev") + ":" + a.get("ino"), (Long) a.get("size"), (FileTime) a.get("lastModifiedTime"),
                (FileTime) a.get("ctime"));
    }

    /**
     * What {@code reader} learns from {@code path} in its current version: remembered, being read by
     * another caller (then its result), or read now. A failure is not remembered.
     */
    @SuppressWarnings("unchecked")
    <T> Verified<T> get(Path path, Reader<T> reader) throws IOException {
        Version version = versionOf(path);
        while (true) {
            Entry known = byFile.get(version.fileKey());
            if (known != null && known.version().equals(version)) {
                return new Verified<>((T) await(known.result(), path), version);
            }
            Entry mine = new Entry(path, version, new CompletableFuture<>());
            boolean installed = known == null ? byFile.putIfAbsent(version.fileKey(), mine) == null
                    : byFile.replace(version.fileKey(), known, mine);
            if (installed) {
                return new Verified<>(readAs(path, version, mine, reader), version);
            }
        }
    }

    private <T> T readAs(Path path, Version version, Entry mine, Reader<T> reader) throws IOException {
        Instant start = Instant.now();
        try {
            T result = reader.read(path);
            if (!versionOf(path).equals(version)) {
                throw new IOException(path + " changed while it was read");
            }
            mine.result().complete(result);
            if (racy(version, start)) {
                byFile.remove(version.fileKey(), mine);
            } else if (byFile.size() > sweepAt) {
                sweep();
            }
            return result;
        } catch (IOException | RuntimeException | Error e) {
            mine.result().completeExceptionally(e);
            byFile.remove(version.fileKey(), mine);
            throw e;
        }
    }

    private boolean racy(Version v, Instant start) {
        Instant trusted = start.minus(racyWindow);
        return !v.changed().toInstant().isBefore(trusted) || !v.modified().toInstant().isBefore(trusted);
    }

    /** Drops what was remembered of files that are gone or changed since. */
    private void sweep() {
        byFile.values().removeIf(e -> e.result().isDone() && !current(e));
        sweepAt = Math.max(SWEEP_ABOVE, 2 * byFile.size());
    }

    private static boolean current(Entry e) {
        try {
            return versionOf(e.path()).equals(e.version());
        } catch (IOException gone) {
            return false;
        }
    }

    int remembered() {
        return byFile.size();
    }

    /** Forgets what was learnt from {@code path}, e.g. before it is checked again on purpose or deleted. */
    void forget(Path path) {
        try {
            Version v = versionOf(path);
            byFile.remove(v.fileKey());
        } catch (IOException e) {
            // gone: its entry can only match a file with the same inode and times, which a new file never has
        }
    }

    /** Throws if {@code path} is no longer in {@code version}: for a file read after it was verified. */
    static void requireUnchanged(Path path, Version version) throws IOException {
        Version now;
        try {
            now = versionOf(path);
        } catch (IOException e) {
            throw new IOException(path + " went away while it was used: " + e.getMessage(), e);
        }
        if (!now.equals(version)) {
            throw new IOException(path + " changed while it was used, after it was verified");
        }
    }

    private static Object await(CompletableFuture<Object> result, Path path) throws IOException {
        try {
            return result.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the check of " + path, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new IOException(Objects.requireNonNullElse(cause.getMessage(), cause.toString()), cause);
        }
    }

    /** A result and the version of the file it holds for. */
    record Verified<T>(T value, Version version) {
    }
}
