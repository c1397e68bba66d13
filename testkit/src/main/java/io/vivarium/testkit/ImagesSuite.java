package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contract every implementation of {@link Images} passes, written against the SPI only: a
 * capture of a running instance writes its artifacts into the directory it is given and reports
 * them with their modes and a {@code captures} equal to {@link Images#captures()}; the instance keeps
 * running; a fork makes an instance that sees the captured files (and, for
 * {@link Images#FILES_AND_MEMORY}, the captured processes: checked where the image says so); children
 * never change the image and do not see each other's writes; {@link Images#missingArtifact} is null
 * for a good image and names the artifact once one is removed; a {@link Images#compact compaction}
 * of a child's image stands alone (depth 0, no parent) and forks like it once the images it was made
 * from are gone; a capture or fork that fails (a
 * cancelled call, an image without its artifact) leaves nothing behind.
 *
 * <p>The suite plays core: it captures into an empty {@code image.staging} directory and renames it to
 * {@code image} before forking (so an image must not depend on where it was staged), hands over the
 * {@link StorageStrategies} the implementation's test supplies, and destroys what it made, even when
 * a check fails; a check fails, too, when anything of an instance is left on the host after its
 * destroy: a process, a mount or a file ({@link InstanceLeftovers}). Files are written and read inside instances with POSIX {@code sh}, so the backend's
 * instances must run processes. For a backend whose instances are slow to make (a VM) the source
 * instance and one image of it are shared by the whole test class: checks that only fork from that
 * image or read the source share them; a check makes its own image only where it damages it.
 */
public abstract class ImagesSuite {

    private static final String MARKER = "kit-marker";
    private static final String MARKED = "captured by the images kit";
    private static final String LATER = "kit-written-after-capture";
    private static final Duration PATIENCE = Duration.ofMinutes(5);
    private static final AtomicInteger IDS = new AtomicInteger();

    /** Holds the source instance, the shared image and the children's directories; deleted after the class. */
    @TempDir
    static Path sharedDir;

    /** The backend object of the running test class, made by its first check. */
    private static SandboxBackend backend;
    private static Source source;
    private static Image shared;

    private final List<Made> children = new ArrayList<>();

    /** The instance images are captured from, and the pid of a process it ran when they were. */
    private record Source(InstanceSpec spec, SandboxInstance instance, String backgroundPid) {
    }

    /** A captured image, renamed from its staging directory into {@code dir}. */
    protected record Image(Path staging, Path dir, CapturedImage captured) {
    }

    private record Made(InstanceSpec spec, SandboxInstance instance) {
    }

    /** A new backend object whose instances keep their directories below {@code stateDir}. */
    protected abstract SandboxBackend newBackend(Path stateDir);

    /** The storage strategies core would hand over, e.g. one that {@link StorageStrategies#choose chooses} a reflink strategy. */
    protected abstract StorageStrategies storage();

    /** The images seam the backend's bundle registers beside {@code backend} (the same revision). */
    protected abstract Images images(SandboxBackend backend);

    /** The spec of a new instance (the source, or a child); override to exercise a backend's own options. */
    protected InstanceSpec spec(String id, Path dir) {
        return new InstanceSpec(id, dir, null);
    }

    @BeforeEach
    final void sharedBackend() {
        if (backend == null) {
            backend = newBackend(sharedDir.resolve("state"));
        }
        Availability availability = backend.availability();
        Assumptions.assumeTrue(availability.available(),
                () -> backend.name() + " is not available on this host: " + availability.reason());
    }

    /** Destroys the check's children as core does, and fails if any is left on the host. */
    @AfterEach
    final void destroyChildren() {
        List<Throwable> failures = new ArrayList<>();
        for (Made c : children) {
            try {
                InstanceLeftovers.destroy(backend, c.spec(), c.instance().state(), true);
            } catch (RuntimeException | AssertionError e) {
                failures.add(e);
            }
        }
        children.clear();
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError("the clean-up failed: " + failures.getFirst().getMessage(),
                    failures.getFirst());
            failures.stream().skip(1).forEach(error::addSuppressed);
            throw error;
        }
    }

    /** Destroys the source after the last check of the class, and fails if it is left on the host. */
    @AfterAll
    static void destroySource() {
        Source s = source;
        SandboxBackend b = backend;
        source = null;
        shared = null;
        backend = null;
        if (s != null) {
            InstanceLeftovers.destroy(b, s.spec(), s.instance().state(), true);
        }
    }

    // ---- the checks --------------------------------------------------------------------------

    @Test
    void aCaptureWritesItsArtifactsIntoItsDirectoryAndSaysWhatItCaptures() throws IOException {
        Image image = sharedImage();
        Images images = images(backend);
        CapturedImage captured = image.captured();
        assertTrue(Set.of(Images.FILES, Images.FILES_AND_MEMORY).contains(images.captures()), images.captures());
        assertEquals(images.captures(), captured.captures(), "a capture says what the backend's images capture");
        assertTrue(captured.pauseMillis() >= 0, "a pause is never negative: " + captured.pauseMillis());
        assertFalse(captured.artifacts().isEmpty(), "a capture stores at least one artifact");
        for (StoredArtifact a : captured.artifacts()) {
            assertNotNull(a.kind(), "every artifact says its kind");
            assertNotNull(a.mode(), "every artifact says how it was stored: " + a);
            assertTrue(a.path().toAbsolutePath().startsWith(image.staging().toAbsolutePath()),
                    () -> a.path() + " is outside the directory the capture was given, " + image.staging());
            Path moved = image.dir().resolve(image.staging().relativize(a.path().toAbsolutePath()));
            assertTrue(Files.exists(moved, LinkOption.NOFOLLOW_LINKS), moved + " is in the image once it is moved into place");
        }
        assertNull(images.missingArtifact(image.dir()), "a good image misses nothing");
        assertEquals(MARKED + "\n", sh(source().instance(), "cat " + MARKER).stdout(), "the source keeps running");
    }

    @Test
    void aForkSeesTheCapturedFilesAndNothingWrittenAfter() throws IOException {
        SandboxInstance child = fork(sharedImage());
        assertTrue(child.alive(), "a forked instance is alive");
        assertEquals(MARKED + "\n", sh(child, "cat " + MARKER).stdout(), "a child sees the captured files");
        assertEquals(1, sh(child, "test -e " + LATER).exitCode(), "a child does not see what its source wrote later");
    }

    /** Optional capability: an image of files and memory resumes the processes the source ran. */
    @Test
    void aFilesAndMemoryForkResumesTheCapturedProcesses() throws IOException {
        Image image = sharedImage();
        Assumptions.assumeTrue(Images.FILES_AND_MEMORY.equals(image.captured().captures()),
                () -> backend.name() + "'s images capture " + image.captured().captures() + ", not memory");
        SandboxInstance child = fork(image);
        String pid = source().backgroundPid();
        assertEquals(0, sh(child, "read -r _ c s _ </proc/" + pid + "/stat && [ \"$c\" = '(sleep)' ]").exitCode(),
                "the child runs the source's background process " + pid);
    }

    @Test
    void childrenLeaveTheImageUnchanged() throws IOException {
        Image image = sharedImage();
        Map<String, String> before = treeState(image.dir());
        List<SandboxInstance> two = List.of(fork(image), fork(image));
        for (SandboxInstance child : two) {
            assertEquals(0, sh(child, "echo changed > " + MARKER + " && echo new > kit-child-file && "
                    + "head -c 1048576 /dev/zero > kit-child-zeros && rm kit-child-zeros && sync").exitCode());
        }
        Made first = children.getFirst();
        backend.destroy(first.spec(), first.instance().state());
        assertEquals(before, treeState(image.dir()), "the image directory is as it was captured");
    }

    @Test
    void twoChildrenAreIndependent() throws IOException {
        Image image = sharedImage();
        SandboxInstance a = fork(image);
        SandboxInstance b = fork(image);
        assertEquals(0, sh(a, "echo a > kit-own && echo a > " + MARKER).exitCode());
        assertEquals(1, sh(b, "test -e kit-own").exitCode(), "one child's new file is not seen by the other");
        assertEquals(MARKED + "\n", sh(b, "cat " + MARKER).stdout(), "nor is its change to a captured file");
        assertEquals(0, sh(b, "echo b > kit-own").exitCode());
        assertEquals("a\n", sh(a, "cat kit-own").stdout(), "and the other's writes do not reach the first");
    }

    /**
     * A compaction of a child's image (a link on the shared image, where the backend chains) stands
     * alone: every artifact at depth 0 without a parent, and once both images it was made from are
     * deleted, a fork from it sees the child's files (and, for {@link Images#FILES_AND_MEMORY}, the
     * processes it ran).
     */
    @Test
    void aCompactedImageOfAChildStandsAloneAndForksLikeIt() throws IOException {
        Images images = images(backend);
        Image base = capture("compact-base");
        SandboxInstance child = fork(base);
        assertEquals(0, sh(child, "echo child > kit-child-own").exitCode());
        Image link = capture(child, "compact-link");
        Path tag = Files.createDirectories(sharedDir.resolve("images").resolve("compacted"));
        Path staging = Files.createDirectory(tag.resolve("image.staging"));
        List<StoredArtifact> recorded = link.captured().artifacts().stream()
                .map(a -> new StoredArtifact(a.kind(), link.dir().resolve(link.staging().relativize(a.path().toAbsolutePath())),
                        a.mode(), 0, null, null, 0))
                .toList();
        CapturedImage flat = images.compact(link.dir(), staging, recorded, storage(), operation());
        assertEquals(images.captures(), flat.captures(), "a compaction says what the backend's images capture");
        assertEquals(recorded.size(), flat.artifacts().size(), "one compacted artifact for each artifact recorded");
        for (StoredArtifact a : flat.artifacts()) {
            assertTrue(a.path().toAbsolutePath().startsWith(staging.toAbsolutePath()),
                    () -> a.path() + " is outside the directory the compaction was given, " + staging);
            assertEquals(0, a.depth(), () -> "a compacted artifact stands alone: " + a);
            assertNull(a.parent(), () -> "a compacted artifact has no parent: " + a);
        }
        Image compacted = new Image(staging, Files.move(staging, tag.resolve("image"), StandardCopyOption.ATOMIC_MOVE),
                flat);
        deleteTree(link.dir());
        deleteTree(base.dir());
        assertNull(images.missingArtifact(compacted.dir()), "a compacted image needs nothing of the images it was made from");
        SandboxInstance grandchild = fork(compacted);
        assertEquals("child\n", sh(grandchild, "cat kit-child-own").stdout(), "a fork of it sees the child's files");
        assertEquals(MARKED + "\n", sh(grandchild, "cat " + MARKER).stdout());
        if (Images.FILES_AND_MEMORY.equals(flat.captures())) {
            String pid = source().backgroundPid();
            assertEquals(0, sh(grandchild, "read -r _ c s _ </proc/" + pid + "/stat && [ \"$c\" = '(sleep)' ]")
                    .exitCode(), "a fork of it runs the processes the child ran, " + pid);
        }
    }

    @Test
    void missingArtifactNamesAnArtifactOnceItIsRemovedAndAForkFromItFailsCleanly() throws IOException {
        Image image = capture("damaged");
        Images images = images(backend);
        assertNull(images.missingArtifact(image.dir()));
        StoredArtifact artifact = image.captured().artifacts().getFirst();
        Path removed = image.dir().resolve(image.staging().relativize(artifact.path().toAbsolutePath()));
        deleteTree(removed);
        String missing = images.missingArtifact(image.dir());
        assertNotNull(missing, "an image without " + removed + " cannot be forked");
        assertTrue(missing.contains(removed.getFileName().toString()), () -> "names " + removed.getFileName() + ": " + missing);

        InstanceSpec spec = childSpec();
        assertThrows(RuntimeException.class, () -> images.fork(spec, image.dir(), storage(), operation()));
        assertNothingLeftBy(spec, "a fork from an image without its artifact");
    }

    @Test
    void aCancelledCaptureOrForkLeavesNothingBehind() throws IOException {
        Images images = images(backend);
        SandboxInstance from = source().instance();
        Path all = sharedDir.resolve("images");
        Path staging = Files.createDirectories(all.resolve("cancelled").resolve("image.staging"));
        Map<String, String> around = treeState(all, staging);
        assertThrows(RuntimeException.class, () -> images.capture(from, staging, storage(), cancelled()));
        assertEquals(around, treeState(all, staging), "a cancelled capture writes nothing outside its directory");
        assertEquals(MARKED + "\n", sh(from, "cat " + MARKER).stdout(), "and its instance keeps running");

        Image image = sharedImage();
        InstanceSpec spec = childSpec();
        assertThrows(RuntimeException.class, () -> images.fork(spec, image.dir(), storage(), cancelled()));
        assertNothingLeftBy(spec, "a cancelled fork");
    }

    // ---- the shared source and image ---------------------------------------------------------

    /** The running instance images are captured from: made once per class, with the marker file and a background process. */
    private Source source() throws IOException {
        if (source == null) {
            String id = newId();
            InstanceSpec spec = spec(id, Files.createDirectories(sharedDir.resolve("state/sandboxes").resolve(id)));
            SandboxInstance instance = backend.create(spec, storage(), operation());
            source = new Source(spec, instance, null);
            assertEquals(0, sh(instance, "echo '" + MARKED + "' > " + MARKER).exitCode());
            String pid = sh(instance, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!").stdout().strip();
            assertTrue(pid.matches("\\d+"), "started a background process: " + pid);
            awaitTrue("the background process " + pid + " runs",
                    () -> sh(instance, "read -r _ c _ </proc/" + pid + "/stat && [ \"$c\" = '(sleep)' ]").exitCode() == 0);
            source = new Source(spec, instance, pid);
        }
        return source;
    }

    /** The image of the source that checks which only fork from it share; the source writes {@value #LATER} right after. */
    protected final Image sharedImage() throws IOException {
        if (shared == null) {
            shared = capture("shared");
            assertEquals(0, sh(source().instance(), "echo later > " + LATER).exitCode());
        }
        return shared;
    }

    /** Captures the source as core does: into an empty {@code image.staging}, renamed to {@code image}. */
    protected final Image capture(String name) throws IOException {
        return capture(source().instance(), name);
    }

    /** Captures {@code from} (the source or a child) as core does. */
    protected final Image capture(SandboxInstance from, String name) throws IOException {
        Path tag = Files.createDirectories(sharedDir.resolve("images").resolve(name));
        Path staging = Files.createDirectory(tag.resolve("image.staging"));
        CapturedImage captured = images(backend).capture(from, staging, storage(), operation());
        Path dir = Files.move(staging, tag.resolve("image"), StandardCopyOption.ATOMIC_MOVE);
        return new Image(staging, dir, captured);
    }

    /** A child forked from {@code image}, destroyed after the check. */
    protected final SandboxInstance fork(Image image) throws IOException {
        InstanceSpec spec = childSpec();
        SandboxInstance child = images(backend).fork(spec, image.dir(), storage(), operation());
        children.add(new Made(spec, child));
        return child;
    }

    private InstanceSpec childSpec() throws IOException {
        String id = newId();
        return spec(id, Files.createDirectories(sharedDir.resolve("state/sandboxes").resolve(id)));
    }

    // ---- helpers -----------------------------------------------------------------------------

    private static ExecResult sh(SandboxInstance instance, String script) {
        return SandboxBackendSuite.exec(instance, "/bin/sh", "-c", script);
    }

    private static void awaitTrue(String what, java.util.function.BooleanSupplier condition) {
        SandboxBackendSuite.awaitTrue(what, condition);
    }

    private static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(PATIENCE));
    }

    /** A context cancelled before the call starts (the daemon is stopping). */
    private static OperationContext cancelled() {
        Instant deadline = Instant.now().plus(PATIENCE);
        return new OperationContext() {
            @Override
            public Instant deadline() {
                return deadline;
            }

            @Override
            public boolean cancelled() {
                return true;
            }

            @Override
            public void progress(String step, double fraction) {
            }
        };
    }

    /** A failed fork left its instance directory empty (or never made it), and nothing else of it on the host. */
    private static void assertNothingLeftBy(InstanceSpec spec, String what) throws IOException {
        Path dir = spec.dir();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> s = Files.list(dir)) {
                List<Path> left = s.toList();
                assertTrue(left.isEmpty(), () -> what + " left " + left);
            }
        }
        List<String> left = InstanceLeftovers.leftByAFailed(spec);
        assertTrue(left.isEmpty(), () -> what + " left " + String.join("; ", left));
    }

    /**
     * Every entry below {@code root} but {@code except} (and below it): its type, size, modification
     * time and, for a file, a CRC32C of its content.
     */
    private static Map<String, String> treeState(Path root, Path... except) throws IOException {
        Map<String, String> state = new TreeMap<>();
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.toList()) {
                if (Stream.of(except).anyMatch(p::startsWith)) {
                    continue;
                }
                String what = Files.isSymbolicLink(p) ? "link " + Files.readSymbolicLink(p)
                        : Files.isDirectory(p) ? "dir"
                        : "file " + Files.size(p) + " " + Files.getLastModifiedTime(p) + " " + crc(p);
                state.put(root.relativize(p).toString(), what);
            }
        }
        return state;
    }

    private static long crc(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        byte[] buf = new byte[1 << 20];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                crc.update(buf, 0, n);
            }
        }
        return crc.getValue();
    }

    private static String newId() {
        return "img-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
