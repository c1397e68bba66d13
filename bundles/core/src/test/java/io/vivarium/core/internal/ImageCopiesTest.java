package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.HeldImage;
import io.vivarium.api.spi.SnapshotCopies;
import io.vivarium.api.spi.SnapshotManifest;
import io.vivarium.api.spi.SnapshotManifest.Entry;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.FakeBackend;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A snapshot's image copied from one core to another: verified, standalone, forkable, and nothing kept when it fails. */
class ImageCopiesTest {
    private static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path tmp;

    private WholeCore holder;
    private ImagingBackend holderBackend;
    private WholeCore receiver;

    @BeforeEach
    void start() throws Exception {
        holderBackend = new ImagingBackend(new FakeBackend());
        holder = started(tmp.resolve("holder"), holderBackend);
        receiver = started(tmp.resolve("receiver"), new ImagingBackend(new FakeBackend()));
    }

    @AfterEach
    void stop() {
        holder.deactivate();
        receiver.deactivate();
    }

    private static WholeCore started(Path state, ImagingBackend backend) throws Exception {
        Files.createDirectories(state);
        WholeCore core = new WholeCore();
        core.seamArrived("fake", 1, 2, backend);
        core.backendArrived(new BackendRegistry.Entry("fake", backend, "test.bundle", "1.0.0", 1));
        core.storageArrived(5, new ImagingBackend.CopyStrategy(ArtifactKind.WORKSPACE, ArtifactKind.MEMORY));
        core.bindStateStores(new FileStores(), Map.of());
        core.start(state, "", Duration.ZERO);
        return core;
    }

    /** Builds {@code base} on the holder and adds a directory, a nested file and a link to its image. */
    private SnapshotManifest built() throws IOException {
        holder.build(ALICE, new SnapshotRequest("base", null, 0, null, null, null));
        Path image = Path.of(holder.info(ALICE, "base").dir()).resolve(SnapshotImages.IMAGE);
        Files.createDirectories(image.resolve("etc/conf.d"));
        Files.writeString(image.resolve("etc/conf.d/app.conf"), "x=1\n");
        Files.setPosixFilePermissions(image.resolve("etc/conf.d/app.conf"), PosixFilePermissions.fromString("rw-r-----"));
        Files.createSymbolicLink(image.resolve("etc/current"), Path.of("conf.d/app.conf"));
        try (java.io.RandomAccessFile sparse = new java.io.RandomAccessFile(image.resolve("disk.img").toFile(), "rw")) {
            sparse.seek(64L << 20);
            sparse.write("end".getBytes(StandardCharsets.UTF_8)); // a 64 MiB hole, then 3 bytes
        }
        return holder.copies().manifest(ALICE.tenant(), "base");
    }

    private SnapshotCopies.Source from(WholeCore core) {
        return e -> core.copies().open(ALICE.tenant(), "base", e.path());
    }

    @Test
    void aCopyIsVerifiedStandaloneAndForkedLikeTheReceiversOwn() throws Exception {
        SnapshotManifest manifest = built();
        assertEquals(List.of("disk.img", "etc", "etc/conf.d", "etc/conf.d/app.conf", "etc/current", ImagingBackend.FILE),
                manifest.entries().stream().map(Entry::path).sorted().toList());

        receiver.copies().receive(ALICE.tenant(), manifest, from(holder));

        io.vivarium.api.SnapshotInfoDetail copy = receiver.info(ALICE, "base");
        assertEquals(SnapshotInfo.READY, copy.status());
        assertTrue(copy.bootable());
        Path image = Path.of(copy.dir()).resolve(SnapshotImages.IMAGE);
        assertEquals("x=1\n", Files.readString(image.resolve("etc/conf.d/app.conf")));
        assertEquals("rw-r-----", PosixFilePermissions.toString(Files.getPosixFilePermissions(image.resolve("etc/conf.d/app.conf"))));
        assertEquals(Path.of("conf.d/app.conf"), Files.readSymbolicLink(image.resolve("etc/current")));
        assertEquals((64L << 20) + 3, Files.size(image.resolve("disk.img")));
        assertTrue(allocatedBytes(image.resolve("disk.img")) < 1 << 20, "the hole is not written");
        assertEquals(manifest.entries(), receiver.copies().manifest(ALICE.tenant(), "base").entries(),
                "the copy lists as its holder's image does: same bytes, owners, modes and times");

        assertEquals(List.of(new HeldImage("alice", "base", true, SnapshotInfo.READY)), receiver.copies().held());
        assertEquals(List.of(new HeldImage("alice", "base", false, SnapshotInfo.READY)), holder.copies().held());

        List<SandboxInfo> children = receiver.fork(ALICE, new ForkRequest("base", 2, null, null, null, null));
        assertEquals(2, children.size());

        receiver.copies().receive(ALICE.tenant(), manifest, e -> {
            throw new AssertionError("a node that holds the copy fetches nothing");
        });
        receiver.deleteSnapshot(ALICE, "base", false, false);
        assertEquals(List.of(), receiver.snapshots(ALICE));
    }

    @Test
    void anImageThatMayBeStoredOnItsHoldersFilesIsSentAsAFlatExportMadeOnceAndDeletedWithTheTag() throws Exception {
        holderBackend.kind = ArtifactKind.MEMORY;
        SnapshotManifest manifest = built();
        assertEquals(List.of(ImagingBackend.FILE), manifest.entries().stream().map(Entry::path).toList(),
                "the export holds what the backend's compaction wrote, not the image's other files");
        assertTrue(manifest.record().contains("\"MEMORY\""), manifest.record());
        Path dir = Path.of(holder.info(ALICE, "base").dir());
        Object exported = Files.getAttribute(dir.resolve(ImageExports.EXPORT).resolve(ImagingBackend.FILE), "unix:ino");
        assertEquals(manifest.entries(), holder.copies().manifest(ALICE.tenant(), "base").entries());
        assertEquals(exported, Files.getAttribute(dir.resolve(ImageExports.EXPORT).resolve(ImagingBackend.FILE), "unix:ino"),
                "a second fetch sends the same export, compacted once");

        receiver.copies().receive(ALICE.tenant(), manifest, from(holder));
        assertTrue(receiver.info(ALICE, "base").bootable());
        assertEquals(1, receiver.fork(ALICE, new ForkRequest("base", 1, null, null, null, null)).size());

        holder.deleteSnapshot(ALICE, "base", false, false);
        assertFalse(Files.exists(dir), "the export goes with the tag");
    }

    @Test
    void aCopyThisNodeCannotForkIsA409AndKeepsNothing() throws Exception {
        SnapshotManifest manifest = built();
        SnapshotManifest otherBackend = new SnapshotManifest("base",
                manifest.record().replace("\"backend\":\"fake\"", "\"backend\":\"qemu\""), manifest.entries());
        ApiException absent = assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(), otherBackend, e -> {
            throw new AssertionError("nothing is fetched for a backend this node lacks");
        }));
        assertEquals(409, absent.status());
        assertTrue(absent.getMessage().contains("backend qemu"), absent.getMessage());
        assertNothingKept();

        SnapshotManifest incomplete = new SnapshotManifest("base", manifest.record(),
                manifest.entries().stream().filter(e -> !e.path().equals(ImagingBackend.FILE)).toList());
        ApiException missing = assertThrows(ApiException.class,
                () -> receiver.copies().receive(ALICE.tenant(), incomplete, from(holder)));
        assertEquals(409, missing.status());
        assertTrue(missing.getMessage().contains("is missing"), missing.getMessage());
        assertNothingKept();
    }

    @Test
    void aFileThatDoesNotMatchItsDigestOrEndsEarlyKeepsNothing() throws Exception {
        SnapshotManifest manifest = built();
        ApiException wrong = assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(), manifest,
                e -> new ByteArrayInputStream("y=2\n".getBytes(StandardCharsets.UTF_8))));
        assertEquals(502, wrong.status());
        assertTrue(wrong.getMessage().contains("SHA-256"), wrong.getMessage());
        assertNothingKept();

        ApiException cut = assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(), manifest,
                e -> new ByteArrayInputStream(new byte[0])));
        assertEquals(502, cut.status());
        assertTrue(cut.getMessage().contains("ended after 0"), cut.getMessage());
        assertNothingKept();

        ApiException gone = assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(), manifest, e -> {
            throw new IOException("the holder went away");
        }));
        assertEquals(502, gone.status());
        assertTrue(gone.getMessage().contains("the holder went away"), gone.getMessage());
        assertNothingKept();

        receiver.copies().receive(ALICE.tenant(), manifest, from(holder));
        assertEquals(SnapshotInfo.READY, receiver.info(ALICE, "base").status(), "and a later fetch that works keeps it");
    }

    @Test
    void entriesThatLeaveTheImageOrWriteThroughALinkAreRefused() throws Exception {
        SnapshotManifest manifest = built();
        Entry file = manifest.entries().stream().filter(e -> e.path().equals(ImagingBackend.FILE)).findFirst().orElseThrow();
        Entry link = new Entry("out", SnapshotManifest.SYMLINK, 0, null, tmp.toString(), 0777, 0, 0, 0);
        for (List<Entry> bad : List.of(
                List.of(rename(file, "../escaped")),
                List.of(rename(file, "/abs")),
                List.of(rename(file, "a//b")),
                List.of(link, rename(file, "out/" + ImagingBackend.FILE)),
                List.of(rename(file, "nodir/" + ImagingBackend.FILE)),
                List.of(file, file))) {
            SnapshotManifest evil = new SnapshotManifest("base", manifest.record(), bad);
            assertEquals(502, assertThrows(ApiException.class,
                    () -> receiver.copies().receive(ALICE.tenant(), evil, from(holder))).status(), bad.toString());
            assertNothingKept();
        }
        try (Stream<Path> outside = Files.list(tmp)) {
            assertEquals(List.of("holder", "receiver"), outside.map(p -> p.getFileName().toString()).sorted().toList(),
                    "nothing was written outside the receiver's image");
        }
    }

    private static Entry rename(Entry e, String path) {
        return new Entry(path, e.type(), e.size(), e.sha256(), e.target(), e.mode(), e.uid(), e.gid(), e.mtimeMillis());
    }

    @Test
    void aRecordOfAnotherTenantOrTagOrNotReadyIsA400AndATagOfTheReceiversOwnA409() throws Exception {
        SnapshotManifest manifest = built();
        assertEquals(400, assertThrows(ApiException.class,
                () -> receiver.copies().receive("bob", manifest, from(holder))).status());
        assertEquals(400, assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(),
                new SnapshotManifest("other", manifest.record(), manifest.entries()), from(holder))).status());
        assertEquals(400, assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(),
                new SnapshotManifest("base", "{\"tag\": 3", manifest.entries()), from(holder))).status());
        receiver.build(ALICE, new SnapshotRequest("base", null, 0, null, null, null));
        ApiException own = assertThrows(ApiException.class, () -> receiver.copies().receive(ALICE.tenant(), manifest, from(holder)));
        assertEquals(409, own.status());
        assertTrue(own.getMessage().contains("of its own"), own.getMessage());
        assertEquals(404, assertThrows(ApiException.class, () -> holder.copies().manifest("bob", "base")).status());
        assertEquals(404, assertThrows(ApiException.class, () -> holder.copies().open(ALICE.tenant(), "base", "../x")).status());
    }

    /** Stands for the daemon dying in the middle of a transfer: no catch block runs, as after kill -9. */
    private static final class Died extends Error {
    }

    @Test
    void aCopyACrashCutShortIsRemovedAtStartNotMarkedFailed() throws Exception {
        SnapshotManifest manifest = built();
        assertThrows(Died.class, () -> receiver.copies().receive(ALICE.tenant(), manifest, e -> {
            throw new Died();
        }));
        receiver.deactivate();
        receiver = started(tmp.resolve("receiver"), new ImagingBackend(new FakeBackend()));
        assertEquals(List.of(), receiver.snapshots(ALICE), "no failed copy is listed");
        assertNothingKept();
        receiver.copies().receive(ALICE.tenant(), manifest, from(holder));
        assertEquals(SnapshotInfo.READY, receiver.info(ALICE, "base").status());
    }

    private static long allocatedBytes(Path file) throws Exception {
        Bounded.Ran stat = Bounded.run(Duration.ofSeconds(30), "stat", "-c", "%b %B", file.toString());
        assertEquals(0, stat.exitCode(), stat.output());
        String[] out = stat.output().strip().split(" ");
        return Long.parseLong(out[0]) * Long.parseLong(out[1]);
    }

    private void assertNothingKept() throws IOException {
        assertEquals(List.of(), receiver.snapshots(ALICE));
        try (Stream<Path> dirs = Files.walk(tmp.resolve("receiver").resolve("snapshots"))) {
            assertEquals(0, dirs.filter(p -> p.getFileName().toString().equals("base")).count(), "no directory of the copy is left");
        }
    }
}
