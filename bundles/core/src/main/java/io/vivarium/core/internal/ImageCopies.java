package io.vivarium.core.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.spi.HeldImage;
import io.vivarium.api.spi.SnapshotCopies;
import io.vivarium.api.spi.SnapshotManifest;
import io.vivarium.api.spi.SnapshotManifest.Entry;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.testpoints.TestPoints;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Copies of snapshot images between daemons ({@link SnapshotCopies}). The holder lists its image
 * once (every entry with its owner, mode and time, every file with its SHA-256) into
 * {@value #MANIFEST} beside the image, which never changes once published; the receiver reserves
 * the tag as a copy, writes each entry into the staging directory (never through a link: a
 * directory it did not create is never written into), checks every file's size and digest as it
 * is written, checks that its backend can fork it here, and publishes it like a capture. What is sent
 * is the image, or for an image that may be stored on files only its holder has, a flat export of it
 * ({@link ImageExports}).
 */
final class ImageCopies implements SnapshotCopies {
    static final String MANIFEST = "manifest.json";
    private static final LinkOption[] NO_FOLLOW = { LinkOption.NOFOLLOW_LINKS };
    private static final int BUFFER = 1 << 20;
    /** The holes a received file gets: blocks of this size that are all zeros are not written. */
    private static final int HOLE = 64 << 10;
    private static final byte[] ZEROS = new byte[HOLE];

    private final Snapshots snapshots;
    private final ImageExports exports;
    private final ObjectMapper json = new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    private final Map<Path, Object> listing = new ConcurrentHashMap<>();
    /** A listing's files, by the {@link BasicFileAttributes#fileKey} of its {@value #MANIFEST} (a tag made again has another). */
    private record Listed(Object version, Set<String> files) {
    }

    private static final int MAX_LISTINGS_KEPT = 64;
    private final Map<Path, Listed> filesByManifest = new ConcurrentHashMap<>();

    ImageCopies(Snapshots snapshots, ImageExports exports) {
        this.snapshots = snapshots;
        this.exports = exports;
    }

    @Override
    public SnapshotManifest manifest(String tenant, String tag) {
        ImageExports.Export sent = sent(tenant, tag);
        try {
            return new SnapshotManifest(tag, json.writeValueAsString(sent.record()), entries(sent));
        } catch (IOException e) {
            throw ApiException.internal("cannot list the image of snapshot " + tag + ": " + e.getMessage(), e);
        }
    }

    private ImageExports.Export sent(String tenant, String tag) {
        SnapshotTags.check("tag", tag);
        SnapshotRecord r = snapshots.lookup(tenant, tag).orElseThrow(() -> Snapshots.notFound(tag));
        if (!SnapshotInfo.READY.equals(r.status())) {
            throw ApiException.conflict("snapshot " + tag + " is " + r.status() + ", so it cannot be copied to another node");
        }
        return exports.of(r);
    }

    /**
     * The image's entries, listed once and kept in {@value #MANIFEST}; one listing per image at a
     * time (others wait for it), images of other tags listed side by side.
     */
    private List<Entry> entries(ImageExports.Export sent) throws IOException {
        SnapshotRecord r = sent.record();
        Path cached = snapshots.images().dirOf(r.tenant(), r.tag()).resolve(MANIFEST);
        if (Files.exists(cached)) {
            return List.of(json.readValue(cached.toFile(), Entry[].class));
        }
        synchronized (listing.computeIfAbsent(cached, k -> new Object())) {
            try {
                return Files.exists(cached) ? List.of(json.readValue(cached.toFile(), Entry[].class)) : list(sent.dir(), cached);
            } finally {
                listing.remove(cached);
            }
        }
    }

    /** The files of an image's listing, kept in memory while its {@value #MANIFEST} is the same file: a fetch asks once per file. */
    private Set<String> files(ImageExports.Export sent) throws IOException {
        SnapshotRecord r = sent.record();
        Path manifest = snapshots.images().dirOf(r.tenant(), r.tag()).resolve(MANIFEST);
        List<Entry> listed = Files.exists(manifest) ? null : entries(sent);
        Object version = Files.readAttributes(manifest, BasicFileAttributes.class).fileKey();
        Listed read = filesByManifest.get(manifest);
        if (read != null && read.version().equals(version)) {
            return read.files();
        }
        Set<String> files = (listed != null ? listed : entries(sent)).stream().filter(e -> SnapshotManifest.FILE.equals(e.type()))
                .map(Entry::path).collect(java.util.stream.Collectors.toUnmodifiableSet());
        if (filesByManifest.size() >= MAX_LISTINGS_KEPT) {
            filesByManifest.clear();
        }
        filesByManifest.put(manifest, new Listed(version, files));
        return files;
    }

    private List<Entry> list(Path image, Path cached) throws IOException {
        List<Entry> entries = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(image)) {
            for (Path p : walk.skip(1).toList()) {
                entries.add(entry(image, p));
            }
        }
        AtomicFiles.write(cached, json.writeValueAsBytes(entries));
        return entries;
    }

    private static Entry entry(Path image, Path p) throws IOException {
        Map<String, Object> a = Files.readAttributes(p, "unix:mode,uid,gid,lastModifiedTime,size", NO_FOLLOW);
        String path = image.relativize(p).toString();
        int mode = (Integer) a.get("mode") & 07777;
        int uid = (Integer) a.get("uid");
        int gid = (Integer) a.get("gid");
        long mtime = ((FileTime) a.get("lastModifiedTime")).toMillis();
        if (Files.isSymbolicLink(p)) {
            return new Entry(path, SnapshotManifest.SYMLINK, 0, null, Files.readSymbolicLink(p).toString(), mode, uid, gid, mtime);
        }
        if (Files.isDirectory(p, NO_FOLLOW)) {
            return new Entry(path, SnapshotManifest.DIRECTORY, 0, null, null, mode, uid, gid, mtime);
        }
        if (!Files.isRegularFile(p, NO_FOLLOW)) {
            throw new IOException(path + " is neither a file, a directory nor a symbolic link");
        }
        MessageDigest sha = sha256();
        try (InputStream in = new DigestInputStream(Files.newInputStream(p, NO_FOLLOW), sha)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        return new Entry(path, SnapshotManifest.FILE, (Long) a.get("size"), HexFormat.of().formatHex(sha.digest()), null, mode,
                uid, gid, mtime);
    }

    @Override
    public List<HeldImage> held() {
        return snapshots.all().stream().map(r -> new HeldImage(r.tenant(), r.tag(), r.copy(), r.status())).toList();
    }

    @Override
    public InputStream open(String tenant, String tag, String path) throws IOException {
        ImageExports.Export sent = sent(tenant, tag);
        if (!files(sent).contains(path)) {
            throw ApiException.notFound("the image of snapshot " + tag + " has no file " + path);
        }
        return Files.newInputStream(sent.dir().resolve(path), NO_FOLLOW);
    }

    @Override
    public void receive(String tenant, SnapshotManifest manifest, Source source) {
        SnapshotRecord theirs = theirs(tenant, manifest);
        Optional<SnapshotRecord> held = snapshots.lookup(tenant, theirs.tag());
        if (held.isPresent() && held.get().copy() && SnapshotInfo.READY.equals(held.get().status())) {
            return;
        }
        String unforkable = snapshots.unforkable(theirs.backend(), theirs.tag(), null);
        if (unforkable != null) {
            throw ApiException.conflict("this node cannot hold a copy of snapshot " + theirs.tag() + ": " + unforkable);
        }
        SnapshotRecord reserved = SnapshotRecord.copyOf(theirs);
        snapshots.reserve(reserved, ApiException.conflict("this node holds a snapshot " + theirs.tag() + " of its own"
                + (held.isPresent() && held.get().copy() ? " (a copy being received): retry once it is ready" : "")
                + "; it is not replaced by another node's"));
        try {
            Path staging = snapshots.images().staging(reserved);
            write(manifest, staging, source);
            unforkable = snapshots.unforkable(theirs.backend(), theirs.tag(), staging);
            if (unforkable != null) {
                throw ApiException.conflict("the copy of snapshot " + theirs.tag() + " cannot be forked on this node, "
                        + "nothing was kept: " + unforkable);
            }
            TestPoints.reach("snapshot.copy.staged");
            snapshots.images().publish(reserved);
            snapshots.update(reserved, reserved.ready(theirs.captures(), theirs.pauseMs(), theirs.artifacts()));
        } catch (IOException e) {
            snapshots.discard(reserved);
            throw new ApiException(502, "the copy of snapshot " + theirs.tag() + " failed, nothing was kept: " + e.getMessage(),
                    null, e);
        } catch (RuntimeException e) {
            snapshots.discard(reserved);
            throw e;
        }
    }

    /** The holder's record, read and checked against what it is said to be: 400 if it is not a ready record of this tag and tenant. */
    private SnapshotRecord theirs(String tenant, SnapshotManifest manifest) {
        String tag = SnapshotTags.check("tag", manifest == null ? null : manifest.tag());
        SnapshotRecord r;
        try {
            r = json.readValue(manifest.record() == null ? "null" : manifest.record(), SnapshotRecord.class);
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest("record: not a snapshot record: " + e.getOriginalMessage());
        }
        if (r == null || !tenant.equals(r.tenant()) || !tag.equals(r.tag()) || !SnapshotInfo.READY.equals(r.status())
                || r.artifacts() == null) {
            throw ApiException.badRequest("record: not the ready record of snapshot " + tag + " of tenant " + tenant);
        }
        return r;
    }

    private static void write(SnapshotManifest manifest, Path staging, Source source) throws IOException {
        Set<Path> dirs = new HashSet<>(Set.of(staging));
        for (Entry e : manifest.entries()) {
            Path target = inside(staging, e.path());
            if (!dirs.contains(target.getParent())) {
                throw new IOException(e.path() + " is not inside a directory listed before it");
            }
            switch (e.type() == null ? "" : e.type()) {
                case SnapshotManifest.DIRECTORY -> {
                    Files.createDirectory(target);
                    dirs.add(target);
                }
                case SnapshotManifest.SYMLINK -> Files.createSymbolicLink(target, Path.of(e.target()));
                case SnapshotManifest.FILE -> receiveFile(e, target, source);
                default -> throw new IOException(e.path() + " has the unknown type " + e.type());
            }
            Files.setAttribute(target, "unix:uid", e.uid(), NO_FOLLOW);
            Files.setAttribute(target, "unix:gid", e.gid(), NO_FOLLOW);
            if (!SnapshotManifest.SYMLINK.equals(e.type())) {
                Files.setAttribute(target, "unix:mode", e.mode(), NO_FOLLOW);
            }
        }
        List<Entry> reversed = new ArrayList<>(manifest.entries());
        java.util.Collections.reverse(reversed); // a directory's time is set after what is written into it
        for (Entry e : reversed) {
            Files.getFileAttributeView(staging.resolve(e.path()), BasicFileAttributeView.class, NO_FOLLOW)
                    .setTimes(FileTime.fromMillis(e.mtimeMillis()), null, null);
        }
    }

    /** {@code path} under {@code root}: relative, without {@code .} or {@code ..} segments. */
    private static Path inside(Path root, String path) throws IOException {
        if (path == null || path.isEmpty() || path.startsWith("/") || path.contains("\0")) {
            throw new IOException("the entry '" + path + "' is not a relative path");
        }
        for (String segment : path.split("/", -1)) {
            if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
                throw new IOException("the entry '" + path + "' has an empty, . or .. segment");
            }
        }
        return root.resolve(path);
    }

    /**
     * Writes one file in chunks of up to {@value #BUFFER} bytes, each hashed and written here while the
     * next is read (and decrypted) ahead: per GiB fetched, the decryption takes 1.1 s of a core, the
     * hashing 0.6 s and the writing 0.5 s (async-profiler, ImageFetchBenchmark), so the hashing
     * belongs with the writing. It leaves a hole for each block of {@value #HOLE} bytes that is all
     * zeros (a workspace image is a mostly empty sparse file).
     */
    private static void receiveFile(Entry e, Path target, Source source) throws IOException {
        MessageDigest sha = sha256();
        long written = 0;
        try (InputStream in = source.open(e);
                ReadAhead ahead = new ReadAhead(in, BUFFER);
                FileChannel out = FileChannel.open(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                        LinkOption.NOFOLLOW_LINKS)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
            byte[] bytes = new byte[BUFFER];
            for (int n; (n = ahead.next(bytes)) > 0; written += n) {
                if (written + n > e.size()) {
                    throw new IOException(e.path() + " is longer than the " + e.size() + " bytes its holder listed");
                }
                sha.update(bytes, 0, n);
                writeData(out, buffer, bytes, n, written);
                TestPoints.reach("snapshot.copy.bytes");
            }
            if (written > 0 && out.size() < written) {
                out.write(ByteBuffer.wrap(new byte[1]), written - 1); // the file's length, past a hole at its end
            }
            // on the disk before the copy is published: the forks that copy it next would otherwise
            // wait on its writeback (a fork of 10 children of a 1 GiB copy took 29 s instead of 5)
            out.force(false);
        } catch (FileAlreadyExistsException dup) {
            throw new IOException(e.path() + " is listed twice", dup);
        }
        if (written != e.size()) {
            throw new IOException(e.path() + " ended after " + written + " of its " + e.size() + " bytes");
        }
        String digest = HexFormat.of().formatHex(sha.digest());
        if (!digest.equals(e.sha256())) {
            throw new IOException(e.path() + " has the SHA-256 " + digest + ", not the " + e.sha256() + " its holder listed");
        }
    }

    /** Writes the runs of blocks of {@code bytes[0..n)} that are not all zeros at {@code at} on, each run in one write. */
    private static void writeData(FileChannel out, ByteBuffer buffer, byte[] bytes, int n, long at) throws IOException {
        for (int block = 0; block < n;) {
            int end = Math.min(block + HOLE, n);
            if (Arrays.mismatch(bytes, block, end, ZEROS, 0, end - block) < 0) {
                block = end;
                continue;
            }
            int runEnd = end;
            while (runEnd < n && Arrays.mismatch(bytes, runEnd, Math.min(runEnd + HOLE, n), ZEROS, 0,
                    Math.min(runEnd + HOLE, n) - runEnd) >= 0) {
                runEnd = Math.min(runEnd + HOLE, n);
            }
            buffer.clear().put(bytes, block, runEnd - block).flip();
            for (long position = at + block; buffer.hasRemaining();) {
                position += out.write(buffer, position);
            }
            block = runEnd;
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
