package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.FakeBackend;

/**
 * A {@link FakeBackend} whose instances have images: an image is one file, {@value #FILE}, holding
 * the instance's id, written and copied through the storage strategy core hands over. The one
 * object is the backend and its images seam (a test double; a real bundle registers them apart).
 */
class ImagingBackend implements SandboxBackend, Images {
    static final String FILE = "ws";

    final FakeBackend fake;
    /** The fork (1-based, counted across forks) that fails, or 0. */
    volatile int failFork;
    final AtomicInteger forks = new AtomicInteger();
    /** When set, capture throws it (after writing part of the image). */
    volatile RuntimeException failCapture;
    /** When set, each create waits for it to open; {@link #creating} counts the creates that entered. */
    volatile CountDownLatch holdCreates;
    final AtomicInteger creating = new AtomicInteger();
    /** The kind of artifact a capture records its one file as. */
    volatile ArtifactKind kind = ArtifactKind.WORKSPACE;

    ImagingBackend(FakeBackend fake) {
        this.fake = fake;
    }

    @Override
    public String name() {
        return fake.name();
    }

    @Override
    public Set<String> capabilities() {
        return fake.capabilities();
    }

    @Override
    public Availability availability() {
        return fake.availability();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        creating.incrementAndGet();
        CountDownLatch hold = holdCreates;
        if (hold != null) {
            try {
                if (!hold.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("held for 60 s: the test never released its creates");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while held", e);
            }
        }
        return fake.create(spec, storage, context);
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        return fake.adopt(spec, state);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        fake.destroy(spec, state);
    }

    @Override
    public String captures() {
        return Images.FILES;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        try {
            Path source = Files.writeString(Files.createTempFile("ws", ""), instance.id());
            StoredArtifact stored = storage.choose(kind, imageDir).store(kind, source,
                    null, imageDir.resolve(FILE), context);
            Files.delete(source);
            RuntimeException failure = failCapture;
            if (failure != null) {
                throw failure;
            }
            return new CapturedImage(List.of(stored), 7, Images.FILES);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        if (forks.incrementAndGet() == failFork) {
            throw new IllegalStateException("no room for fork " + failFork);
        }
        try {
            Files.createDirectories(spec.dir());
            storage.choose(ArtifactKind.WORKSPACE, spec.dir()).materialise(new StoredArtifact(ArtifactKind.WORKSPACE,
                    imageDir.resolve(FILE), null, 0, null, null, 0), spec.dir().resolve(FILE), context);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return fake.create(spec, storage, context);
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return Files.isRegularFile(imageDir.resolve(FILE)) ? null : imageDir.resolve(FILE) + " is missing";
    }

    /** A strategy that copies files plainly. */
    static final class CopyStrategy implements StorageStrategy {
        private final Set<ArtifactKind> kinds;

        /** A strategy for workspaces. */
        CopyStrategy() {
            this(ArtifactKind.WORKSPACE);
        }

        CopyStrategy(ArtifactKind... kinds) {
            this.kinds = Set.of(kinds);
        }

        @Override
        public String name() {
            return "copy";
        }

        @Override
        public Set<ArtifactKind> kinds() {
            return kinds;
        }

        @Override
        public Set<String> modes() {
            return Set.of("copy");
        }

        @Override
        public boolean supports(ArtifactKind kind, Path dir) {
            return false;
        }

        @Override
        public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
                OperationContext context) throws IOException {
            Files.copy(source, target);
            return new StoredArtifact(kind, target, "copy", Files.size(target), null, null, 0);
        }

        @Override
        public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
            return store(stored.kind(), stored.path(), null, target, context);
        }

        @Override
        public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
            return store(stored.kind(), stored.path(), null, target, context);
        }

        @Override
        public void verify(StoredArtifact stored) {
        }

        @Override
        public void delete(StoredArtifact stored) throws IOException {
            Files.deleteIfExists(stored.path());
        }
    }
}
