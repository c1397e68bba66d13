package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.state.Stored;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.NodeId;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.FakeBackend;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The snapshot registry, forks and branches over a fake backend with images and a plain-copy strategy. */
class SnapshotRegistryTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);
    static final Caller BOB = new Caller("bob", Role.ADMIN);

    @TempDir
    Path state;

    private final FakeBackend fake = new FakeBackend();
    private final ImagingBackend backend = new ImagingBackend(fake);
    private WholeCore m;

    @BeforeEach
    void start() throws Exception {
        m = started();
    }

    private WholeCore started() throws Exception {
        WholeCore manager = new WholeCore();
        manager.seamArrived("fake", 1, 2, backend);
        manager.backendArrived(new BackendRegistry.Entry("fake", backend, "test.bundle", "1.0.0", 1));
        manager.storageArrived(5, new ImagingBackend.CopyStrategy());
        manager.bindStateStores(new FileStores(), java.util.Map.of());
        manager.start(state, "", Duration.ZERO);
        return manager;
    }

    private SnapshotInfo build(String tag) {
        return m.build(ALICE, new SnapshotRequest(tag, null, 0, null, null, null));
    }

    private static ForkRequest fork(String tag, int n) {
        return new ForkRequest(tag, n, null, null, null, null);
    }

    private static int status(Runnable call) {
        return assertThrows(ApiException.class, call::run).status();
    }

    @Test
    void aBuildCapturesAFreshSandboxAndRemovesIt() {
        List<String> steps = new CopyOnWriteArrayList<>();
        SnapshotInfo info = m.build(ALICE, new SnapshotRequest("base", null, 0, null, null, null),
                (what, done, of) -> steps.add(done + "/" + of + " " + what));
        assertEquals(List.of("1/4 builder sandbox started", "2/4 setup ran", "3/4 boot wait over",
                "4/4 captured"), steps, "each step told as it is done");
        assertEquals(SnapshotInfo.READY, info.status());
        assertTrue(info.bootable());
        assertEquals("files", info.captures());
        assertNull(info.branchedFrom());
        assertNull(info.pauseMs());
        assertEquals(List.of(), m.list(ALICE), "the builder sandbox is removed");
        assertEquals(1, fake.creates.size());
        assertEquals(List.of("base"), m.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList());
        assertEquals(400, status(() -> build("base")), "the seed answers 400 for a tag that exists");
    }

    @Test
    void tagsArePlainNamesSoNoTraversalReachesTheFilesystem() throws Exception {
        for (String bad : List.of("..", ".", "a/b", "/etc", ".hidden", "%2e%2e", "a\\b", "x".repeat(65), "")) {
            assertEquals(400, status(() -> build(bad)), bad);
            assertEquals(400, status(() -> m.info(ALICE, bad)), bad);
            assertEquals(400, status(() -> m.deleteSnapshot(ALICE, bad, false, false)), bad);
            assertEquals(400, status(() -> m.fork(ALICE, fork(bad, 1))), bad);
        }
        try (Stream<Path> all = Files.walk(state.resolve("snapshots"))) {
            assertEquals(List.of(state.resolve("snapshots")), all.toList(), "nothing was written");
        }
    }

    @Test
    void tagsBelongToATenant() {
        build("base");
        assertEquals(404, status(() -> m.info(BOB, "base")));
        assertEquals(404, status(() -> m.fork(BOB, fork("base", 1))));
        assertEquals(404, status(() -> m.deleteSnapshot(BOB, "base", false, false)));
        assertEquals(List.of(), m.snapshots(BOB));
        m.build(BOB, new SnapshotRequest("base", null, 0, null, null, null));
        assertEquals(1, m.snapshots(BOB).size(), "another tenant may use the same tag");
    }

    @Test
    void aTenantThatIsNotAPlainNameGetsAnEncodedDirectory() {
        Caller odd = new Caller("../evil", Role.ADMIN);
        SnapshotInfo info = m.build(odd, new SnapshotRequest("base", null, 0, null, null, null));
        assertEquals(state.resolve("snapshots/%2e2e2f6576696c/base").toAbsolutePath().toString(), info.dir());
    }

    @Test
    void aForkMakesNChildrenEachWithItsOwnCopy() throws Exception {
        build("base");
        List<Integer> told = new CopyOnWriteArrayList<>();
        List<SandboxInfo> children = m.fork(ALICE, fork("base", 3), (what, done, of) -> told.add(done));
        assertEquals(3, children.size());
        assertEquals(List.of(0, 1, 2, 3), told, "the start, then each child once, in order");
        for (SandboxInfo c : children) {
            assertEquals("base", c.image());
            assertEquals("base", c.snapshotTag(), "the seed's snapshot_tag");
            assertTrue(Files.isRegularFile(state.resolve("sandboxes").resolve(c.id()).resolve(ImagingBackend.FILE)));
        }
        assertEquals(3, m.list(ALICE).size());
    }

    @Test
    void aForkIsRefusedBeforeAnythingStarts() {
        build("base");
        assertEquals(400, status(() -> m.fork(ALICE, fork("base", 0))));
        assertEquals(400, status(() -> m.fork(ALICE, fork("base", 1001))));
        List<Integer> told = new CopyOnWriteArrayList<>();
        assertEquals(404, status(() -> m.fork(ALICE, fork("nope", 1), (what, done, of) -> told.add(done))));
        assertEquals(List.of(), told, "a fork refused is refused before its first step");
        assertEquals(410, status(() -> m.fork(ALICE, new ForkRequest("base", 1, null, null, true, null))));
        assertEquals(410, status(() -> m.fork(ALICE, new ForkRequest("base", 1, null, null, null, true))));
        m.maxSandboxes(2);
        ApiException full = assertThrows(ApiException.class, () -> m.fork(ALICE, fork("base", 3)));
        assertEquals(503, full.status());
        assertTrue(full.retryAfterSeconds() != null && full.retryAfterSeconds() > 0);
        assertTrue(full.getMessage().contains("at most 2"), full.getMessage());
        assertEquals(0, backend.forks.get(), "nothing was started");
        assertEquals(2, m.fork(ALICE, new ForkRequest("base", 2, true, null, null, null)).size(),
                "per_child_netns is accepted and ignored");
    }

    @Test
    void everyCreateCountsAgainstMaxSandboxesBeforeAnythingStarts() {
        build("base");
        m.maxSandboxes(2);
        m.fork(ALICE, fork("base", 1));
        m.create(ALICE, null);
        int entered = backend.creating.get();
        for (Runnable create : List.<Runnable>of(() -> m.create(ALICE, null), () -> m.fork(ALICE, fork("base", 1)),
                () -> m.build(ALICE, new SnapshotRequest("more", null, 0, null, null, null)))) {
            ApiException full = assertThrows(ApiException.class, create::run);
            assertEquals(503, full.status(), full.getMessage());
            assertTrue(full.retryAfterSeconds() != null && full.retryAfterSeconds() > 0);
        }
        assertEquals(entered, backend.creating.get(), "no create reached the backend");
        assertEquals(1, backend.forks.get(), "no fork reached the backend");
        assertEquals(List.of("base"), m.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList(), "no tag was reserved");
    }

    @Test
    void concurrentCreatesNeverPassMaxSandboxes() throws Exception {
        m.maxSandboxes(3);
        CountDownLatch hold = new CountDownLatch(1);
        backend.holdCreates = hold;
        List<CompletableFuture<Integer>> creates = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            creates.add(CompletableFuture.supplyAsync(() -> {
                try {
                    m.create(ALICE, null);
                    return 201;
                } catch (ApiException e) {
                    return e.status();
                }
            }, Executors.newVirtualThreadPerTaskExecutor()));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (creates.stream().filter(CompletableFuture::isDone).count() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        hold.countDown();
        List<Integer> statuses = creates.stream().map(c -> Bounded.get(c, Duration.ofSeconds(30), "a create ends")).sorted()
                .toList();
        assertEquals(List.of(201, 201, 201, 503, 503, 503), statuses);
        assertEquals(3, backend.creating.get(), "the refused ones never reached the backend");
        assertEquals(3, m.list(ALICE).size());
    }

    @Test
    void aForkIsAllOrNothing() {
        build("base");
        backend.failFork = 3;
        ApiException e = assertThrows(ApiException.class, () -> m.fork(ALICE, fork("base", 4)));
        assertEquals(500, e.status());
        assertTrue(e.getMessage().matches("child \\d of 4 .*") && e.getMessage().contains("no room for fork 3")
                && e.getMessage().contains("made were removed"), e.getMessage());
        assertEquals(List.of(), m.list(ALICE));
        assertTrue(fake.running.isEmpty(), "every child's processes are gone");
    }

    @Test
    void aSnapshotWithoutItsArtifactIsNotRestorable() throws Exception {
        SnapshotInfo info = build("base");
        Files.delete(Path.of(info.dir()).resolve("image").resolve(ImagingBackend.FILE));
        SnapshotInfo now = m.snapshots(ALICE).get(0);
        assertFalse(now.bootable());
        assertTrue(now.warning().contains("ws is missing"), now.warning());
        ApiException e = assertThrows(ApiException.class, () -> m.fork(ALICE, fork("base", 1)));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("ws is missing"), e.getMessage());
    }

    @Test
    void aBranchCapturesARunningSandboxUnderANewTag() {
        build("base");
        SandboxInfo child = m.fork(ALICE, fork("base", 1)).get(0);
        SnapshotInfo branch = m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null));
        assertEquals(child.id(), branch.branchedFrom());
        assertEquals(7L, branch.pauseMs());
        assertEquals("base", branch.parentTag(), "lineage: the tag the sandbox was forked from");
        assertEquals("running", m.get(ALICE, child.id()).status(), "the parent keeps running");
        assertEquals(1, m.fork(ALICE, fork("br", 1)).size());
        assertEquals(409, status(() -> m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null))));
        assertEquals(410, status(() -> m.branch(ALICE, child.id(), new BranchRequest("x", "live", null, null, null))));
        assertEquals(410, status(() -> m.branch(ALICE, child.id(), new BranchRequest("x", null, null, true, null))));
        assertEquals(400, status(() -> m.branch(ALICE, child.id(), new BranchRequest("../x", null, null, null, null))));
        assertEquals(404, status(() -> m.branch(ALICE, "sb-nope", new BranchRequest("x", null, null, null, null))));
        assertEquals(404, status(() -> m.branch(BOB, child.id(), new BranchRequest("x", null, null, null, null))));
    }

    @Test
    void aBranchThatTimesOutOrFailsLeavesNoTagAndNoFiles() throws Exception {
        build("base");
        SandboxInfo child = m.fork(ALICE, fork("base", 1)).get(0);
        backend.failCapture = new ApiException(504, "timed out while storing the workspace");
        assertEquals(504, status(() -> m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null))));
        backend.failCapture = new IllegalStateException("disk gone");
        assertThrows(IllegalStateException.class,
                () -> m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null)));
        assertEquals(List.of("base"), m.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList());
        assertFalse(Files.exists(state.resolve("snapshots/alice/br")), "no record, no staging");
        backend.failCapture = null;
        assertEquals(SnapshotInfo.READY, m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null))
                .status(), "the tag is free again");
        assertEquals("running", m.get(ALICE, child.id()).status());
    }

    @Test
    void aDeleteFollowsTheChainRules() {
        build("base");
        SandboxInfo child = m.fork(ALICE, fork("base", 1)).get(0);
        m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null));
        SandboxInfo grandChild = m.fork(ALICE, fork("br", 1)).get(0);
        m.branch(ALICE, grandChild.id(), new BranchRequest("br2", null, null, null, null));
        SnapshotInfoDetail detail = m.info(ALICE, "br2");
        assertEquals(List.of("base", "br"), detail.ancestors());
        assertEquals(List.of("br"), m.info(ALICE, "base").dependents());

        ApiException blocked = assertThrows(ApiException.class, () -> m.deleteSnapshot(ALICE, "base", false, false));
        assertEquals(409, blocked.status());
        assertTrue(blocked.getMessage().contains("[br]") && blocked.getMessage().contains("?cascade=true"),
                blocked.getMessage());
        assertEquals(400, status(() -> m.deleteSnapshot(ALICE, "base", true, true)));
        m.deleteSnapshot(ALICE, "br", true, false);
        assertEquals(List.of("base"), m.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList(), "br and br2 went");
        assertEquals(2, m.list(ALICE).size(), "forked sandboxes keep running");
        m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null));
        m.deleteSnapshot(ALICE, "base", false, true);
        assertEquals(List.of("br"), m.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList());
        assertTrue(m.snapshots(ALICE).get(0).bootable(), "an orphan keeps its own files");
        assertEquals(404, status(() -> m.deleteSnapshot(ALICE, "base", false, false)));
        assertFalse(Files.exists(state.resolve("snapshots/alice/base")));
    }

    @Test
    void aRecordOfAnotherNodeIsNeverUsedHere() throws Exception {
        build("base");
        build("half");
        for (String tag : List.of("base", "half")) {
            Path record = state.resolve("snapshot-records").resolve(SnapshotTags.key("alice", tag) + ".json");
            ObjectNode envelope = (ObjectNode) new ObjectMapper().readTree(record.toFile());
            envelope.put("node", "node-elsewhere");
            if (tag.equals("half")) {
                ((ObjectNode) envelope.get("body")).put("status", SnapshotInfo.WRITING);
            }
            Files.write(record, new ObjectMapper().writeValueAsBytes(envelope));
        }
        WholeCore restarted = started();
        assertEquals(List.of(), restarted.snapshots(ALICE), "another node's snapshots are not listed");
        assertEquals(404, status(() -> restarted.fork(ALICE, fork("base", 1))));
        assertEquals(404, status(() -> restarted.info(ALICE, "base")));
        assertEquals(404, status(() -> restarted.deleteSnapshot(ALICE, "base", false, false)));
        assertEquals(404, status(() -> restarted.compact(ALICE, "base", new CompactRequest("flat"))));
        ApiException taken = assertThrows(ApiException.class,
                () -> restarted.build(ALICE, new SnapshotRequest("base", null, 0, null, null, null)));
        assertEquals(409, taken.status());
        assertTrue(taken.getMessage().contains("node-elsewhere"), taken.getMessage());
        assertEquals(0, backend.forks.get(), "nothing was forked from another node's image");
        try (FileStateStore store = FileStateStore.open(state, NodeId.readOrCreate(state), StateCollections.ALL)) {
            Stored<SnapshotRecord> half = store.get(StateCollections.SNAPSHOTS, SnapshotTags.key("alice", "half"))
                    .orElseThrow();
            assertEquals(SnapshotInfo.WRITING, half.body().status(), "another node's capture is not failed here");
            assertEquals("node-elsewhere", half.node());
        }
        assertFalse(Files.exists(state.resolve("snapshots/alice/base")), "no local directory is kept for it");
    }

    @Test
    void aCompactionWritesAFlatCopyUnderANewTag() {
        build("base");
        assertEquals(400, status(() -> m.compact(ALICE, "base", new CompactRequest("base"))));
        assertEquals(400, status(() -> m.compact(ALICE, "base", new CompactRequest("../flat"))));
        assertEquals(404, status(() -> m.compact(ALICE, "nope", new CompactRequest("flat"))));
        SnapshotInfo flat = m.compact(ALICE, "base", new CompactRequest("flat"));
        assertEquals(SnapshotInfo.READY, flat.status());
        assertNull(flat.parentTag(), "a compacted snapshot stands alone");
        assertEquals(409, status(() -> m.compact(ALICE, "base", new CompactRequest("flat"))));
        assertEquals(1, m.fork(ALICE, fork("flat", 1)).size());
    }

    @Test
    void aSnapshotLeftWritingByACrashIsFailedAtStartUpAndItsBuilderRemoved() throws Exception {
        build("base");
        SandboxInfo builder = m.fork(ALICE, fork("base", 1)).get(0);
        SnapshotRecord interrupted = SnapshotRecord.writing("alice", "half", "fake", 1, null, null, null)
                .withBuilder(builder.id(), null);
        try (FileStateStore store = FileStateStore.open(state, NodeId.readOrCreate(state), StateCollections.ALL)) {
            store.put(StateCollections.SNAPSHOTS, SnapshotTags.key("alice", "half"), interrupted, Stored.ABSENT);
        }
        SnapshotImages images = new SnapshotImages(state);
        images.create(interrupted);
        Path staging = images.staging(interrupted);
        Files.writeString(staging.resolve("partial"), "x");

        WholeCore restarted = started();
        SnapshotInfo half = restarted.snapshots(ALICE).stream().filter(s -> s.tag().equals("half")).findFirst()
                .orElseThrow();
        assertEquals(SnapshotInfo.FAILED, half.status());
        assertFalse(half.bootable());
        assertEquals(Snapshots.INTERRUPTED, half.warning());
        assertFalse(Files.exists(staging));
        assertEquals(409, status(() -> restarted.fork(ALICE, fork("half", 1))));
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!restarted.list(ALICE).isEmpty() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(List.of(), restarted.list(ALICE), "the builder of the interrupted build is removed");
        restarted.deleteSnapshot(ALICE, "half", false, false);
        assertEquals(List.of("base"), restarted.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList());
    }

    @Test
    void recordsAnOlderDaemonWroteBesideTheImagesMoveIntoTheStateStore() throws Exception {
        build("base");
        SandboxInfo child = m.fork(ALICE, fork("base", 1)).get(0);
        m.branch(ALICE, child.id(), new BranchRequest("br", null, null, null, null));
        ObjectMapper json = new ObjectMapper();
        Path records = state.resolve("snapshot-records");
        for (String tag : List.of("base", "br")) {
            Path record = records.resolve(SnapshotTags.key("alice", tag) + ".json");
            // the body is what SnapshotStore wrote as snapshot.json before the state store held it
            Files.write(state.resolve("snapshots/alice/" + tag + "/snapshot.json"),
                    json.writeValueAsBytes(json.readTree(record.toFile()).get("body")));
            if (tag.equals("base")) {
                Files.delete(record);
            } // br: a migration cut short after its put; the record in the store wins
        }
        Files.createDirectories(state.resolve("snapshots/alice/gone/image"));

        for (int start = 0; start < 2; start++) {
            WholeCore restarted = started();
            assertEquals(List.of("base", "br"), restarted.snapshots(ALICE).stream().map(SnapshotInfo::tag).toList());
            assertTrue(restarted.snapshots(ALICE).stream().allMatch(SnapshotInfo::bootable));
            assertEquals(List.of("br"), restarted.info(ALICE, "base").dependents());
            assertEquals(1, restarted.fork(ALICE, fork("base", 1)).size());
        }
        assertFalse(Files.exists(state.resolve("snapshots/alice/base/snapshot.json")));
        assertFalse(Files.exists(state.resolve("snapshots/alice/br/snapshot.json")));
        assertTrue(Files.exists(records.resolve("5-alice.base.json")));
        assertFalse(Files.exists(state.resolve("snapshots/alice/gone")), "a directory without a record is removed");
    }

    @Test
    void touchResetsTheIdleClockOfASandboxOfTheCaller() {
        SandboxInfo sb = m.create(ALICE, null);
        m.touch(ALICE, sb.id());
        assertEquals(404, status(() -> m.touch(BOB, sb.id())));
        assertEquals(404, status(() -> m.touch(ALICE, "sb-nope")));
    }
}
