package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.HostFiles;

/**
 * Lists and fingerprints files of a sandbox whose workspace is on the host: a metadata walk with
 * {@code find -xdev -type f} semantics (regular files only, symlinks never followed, other
 * filesystems skipped), readability judged as the sandbox's uid/gid would see it, then hashing on
 * every core. A fingerprint from an earlier listing is reused when the file's size, mtime, ctime
 * and inode are unchanged and it was last changed before that listing began.
 */
final class HostLister {
    private static final LinkOption[] NOFOLLOW = { LinkOption.NOFOLLOW_LINKS };

    private final ForkJoinPool pool;

    HostLister(ForkJoinPool pool) {
        this.pool = pool;
    }

    private record Candidate(String sandboxPath, Path hostPath, BasicFileAttributes attrs, String stamp,
            boolean readable) {
    }

    FileListing list(HostFiles view, List<String> dirs, FingerprintMode mode, FileListing reuse, ListingLimits limits) {
        long startedAt = Instant.now().getEpochSecond();
        List<Candidate> candidates = new ArrayList<>();
        for (String dir : dirs) {
            walk(view, dir, candidates, limits);
        }
        Map<String, String> reused = new HashMap<>();
        if (reuse != null && reuse.mode().equals(mode.name()) && reuse.stamps() != null) {
            for (Candidate c : candidates) {
                String old = reuse.stamps().get(c.sandboxPath());
                if (c.stamp().equals(old) && ctimeSeconds(c.stamp()) < reuse.takenAtUnix()) {
                    reused.put(c.sandboxPath(), reuse.files().get(c.sandboxPath()));
                }
            }
        }
        Map<String, String> fingerprints;
        try {
            fingerprints = pool.submit(() -> candidates.parallelStream()
                    .collect(java.util.stream.Collectors.toConcurrentMap(Candidate::sandboxPath, c -> {
                        String known = reused.get(c.sandboxPath());
                        if (known != null) {
                            return known;
                        }
                        limits.checkTime();
                        return fingerprint(mode, c);
                    }))).get();
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while listing files", 1);
        }
        TreeMap<String, String> files = new TreeMap<>();
        Map<String, String> stamps = new HashMap<>();
        for (Candidate c : candidates) {
            String fp = fingerprints.get(c.sandboxPath());
            limits.add(c.sandboxPath(), fp);
            files.put(c.sandboxPath(), fp);
            stamps.put(c.sandboxPath(), c.stamp());
        }
        return new FileListing(mode.name(), dirs, startedAt, files, stamps);
    }

    /** How many regular files are below {@code dirs}, without reading any. */
    int count(HostFiles view, List<String> dirs, ListingLimits limits) {
        List<Candidate> candidates = new ArrayList<>();
        for (String dir : dirs) {
            walk(view, dir, candidates, limits);
        }
        return candidates.size();
    }

    /**
     * Regular files at {@code path}: the file itself, or those below it if it is a directory, or
     * none if it does not exist (or is something else) in this view.
     */
    List<String> regularFilesAt(HostFiles view, String path, FingerprintMode mode, Map<String, String> into,
            ListingLimits limits) {
        Path host = hostPath(view, path);
        if (host == null || !Files.exists(host, NOFOLLOW) || hasSymlinkBelowRoot(view, host)) {
            return List.of();
        }
        List<Candidate> candidates = new ArrayList<>();
        if (Files.isRegularFile(host, NOFOLLOW)) {
            try {
                candidates.add(candidate(view, new TreeWalk.Entry(host, TreeWalk.attributes(host)), path));
            } catch (IOException e) {
                throw ApiException.badRequest("cannot read " + path + ": " + reason(e));
            }
        } else if (Files.isDirectory(host, NOFOLLOW)) {
            walk(view, path, candidates, limits);
        }
        List<String> paths = new ArrayList<>();
        for (Candidate c : candidates) {
            limits.checkTime();
            into.put(c.sandboxPath(), fingerprint(mode, c));
            paths.add(c.sandboxPath());
        }
        return paths;
    }

    private void walk(HostFiles view, String dir, List<Candidate> out, ListingLimits limits) {
        Path root = hostPath(view, dir);
        if (root == null) {
            throw ApiException.badRequest("path " + dir + " is outside the sandbox's workspace: paths in this sandbox are "
                    + "rooted at " + view.sandboxDir());
        }
        if (hasSymlinkBelowRoot(view, root) || !Files.isDirectory(root, NOFOLLOW)) {
            throw ApiException.badRequest("path " + dir + " is not a directory in the sandbox");
        }
        int before = out.size();
        try {
            for (TreeWalk.Entry e : TreeWalk.regularFiles(pool, root, (d, unix) -> {
                limits.checkTime();
                if (!permits(view, unix, 05)) {
                    throw ApiException.badRequest("directory " + sandboxPath(view, d)
                            + " is not readable by the sandbox user, so it cannot be listed");
                }
            }, n -> limits.checkCount(before + n))) {
                out.add(candidate(view, e, sandboxPath(view, e.path())));
            }
        } catch (NoSuchFileException e) {
            throw ApiException.badRequest("the walk failed: " + sandboxPath(view, Path.of(e.getFile()))
                    + " disappeared while listing; nothing was recorded, retry when the sandbox is idle");
        } catch (IOException e) {
            throw ApiException.badRequest("the walk of " + dir + " failed" + at(view, e) + ", so nothing was recorded: "
                    + reason(e));
        }
    }

    private static Candidate candidate(HostFiles view, TreeWalk.Entry e, String sandboxPath) {
        String stamp = e.size() + ":" + nanos(e.lastModifiedTime()) + ":" + nanos(e.ctime()) + ":" + e.fileKey();
        return new Candidate(sandboxPath, e.path(), e, stamp, permits(view, e.unix(), 04));
    }

    private static String fingerprint(FingerprintMode mode, Candidate c) {
        if (!c.readable()) {
            return FingerprintMode.UNREADABLE;
        }
        try {
            return mode.fingerprint(c.hostPath(), c.attrs());
        } catch (NoSuchFileException e) {
            throw ApiException.badRequest("the walk failed: " + c.sandboxPath()
                    + " disappeared while listing; nothing was recorded, retry when the sandbox is idle");
        } catch (IOException e) {
            throw ApiException.badRequest("cannot fingerprint " + c.sandboxPath() + ", so nothing was recorded: "
                    + reason(e));
        }
    }

    /** Whether uid/gid (no supplementary groups) get all of {@code bits} (04 read, 01 execute). */
    static boolean permits(HostFiles view, Map<String, Object> unix, int bits) {
        if (view.uid() == 0) {
            return true;
        }
        int mode = (Integer) unix.get("mode");
        int granted;
        if (((Integer) unix.get("uid")) == view.uid()) {
            granted = (mode >> 6) & 07;
        } else if (((Integer) unix.get("gid")) == view.gid()) {
            granted = (mode >> 3) & 07;
        } else {
            granted = mode & 07;
        }
        return (granted & bits) == bits;
    }

    private static Path hostPath(HostFiles view, String sandboxPath) {
        if (!SandboxPaths.within(sandboxPath, view.sandboxDir())) {
            return null;
        }
        String rel = sandboxPath.substring(view.sandboxDir().length());
        return rel.isEmpty() ? view.hostDir() : view.hostDir().resolve(rel.substring(1));
    }

    /** A symlink anywhere between the workspace root and {@code host} would lead out of the sandbox. */
    private static boolean hasSymlinkBelowRoot(HostFiles view, Path host) {
        Path p = host;
        while (p != null && !p.equals(view.hostDir())) {
            if (Files.isSymbolicLink(p)) {
                return true;
            }
            p = p.getParent();
        }
        return false;
    }

    /** Where a walk failed, as a sandbox path: the host path (the daemon's view) is none of the caller's business. */
    private static String at(HostFiles view, IOException e) {
        return e instanceof FileSystemException f && f.getFile() != null
                ? " at " + sandboxPath(view, Path.of(f.getFile())) : "";
    }

    /** What went wrong without the host path (e.g. ELOOP's "Too many levels of symbolic links"). */
    private static String reason(IOException e) {
        if (e instanceof FileSystemException f) {
            return f.getReason() != null ? f.getReason() : e.getClass().getSimpleName();
        }
        return String.valueOf(e.getMessage());
    }

    private static String sandboxPath(HostFiles view, Path host) {
        String rel = view.hostDir().relativize(host).toString();
        String base = view.sandboxDir().equals("/") ? "" : view.sandboxDir();
        return rel.isEmpty() ? view.sandboxDir() : base + "/" + rel;
    }

    private static long nanos(FileTime t) {
        Instant i = t.toInstant();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    private static long ctimeSeconds(String stamp) {
        return Long.parseLong(stamp.split(":")[2]) / 1_000_000_000L;
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        return new IllegalStateException(t);
    }
}
