package io.vivarium.storage.qcow2.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.StagedFile;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.metatype.annotations.Designate;

/**
 * VM disks as qcow2 files chained by backing files, through qemu-img: {@link #store} writes an
 * overlay holding only what a disk has beyond its backing file (or its {@code parent}),
 * {@link #materialise} an empty writable overlay on a stored disk (what a VM boots from),
 * {@link #compact} a standalone copy, {@link #verify} checks each link's metadata and that the
 * chain is the one recorded. Internal snapshots (savevm) are not artifacts: they are a VM's live
 * state and stay with the backend's checkpoints. Public for the tests of the backends that use it.
 */
@Component(service = StorageStrategy.class, property = StorageStrategy.NAME_PROPERTY + "=" + Qcow2Storage.NAME,
        configurationPid = Qcow2Config.PID)
@Designate(ocd = Qcow2Config.class)
public final class Qcow2Storage implements StorageStrategy {

    public static final String NAME = "qcow2";
    /** An overlay on a backing file. */
    static final String MODE_OVERLAY = "qcow2-overlay";
    /** A standalone qcow2 (a compaction, or a store of a disk without a backing file). */
    static final String MODE_FLAT = "flat";

    /** The longest a single qemu-img call may take when the caller's context allows more. */
    private static final Duration CHECK_TIME = Duration.ofMinutes(2);

    private final QemuImg qemuImg;
    /** Stored disks already checked, by file identity, with the modification time they had then. */
    private final Map<Object, Checked> checked = new ConcurrentHashMap<>();

    private record Checked(FileTime modified, QemuImg.Info info) {
    }

    @Activate
    public Qcow2Storage(Qcow2Config config) {
        this(Path.of(config.qemu__img__path()));
    }

    public Qcow2Storage(Path qemuImg) {
        this.qemuImg = new QemuImg(qemuImg);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return EnumSet.of(ArtifactKind.DISK);
    }

    @Override
    public Set<String> modes() {
        return Set.of(MODE_OVERLAY, MODE_FLAT);
    }

    @Override
    public boolean chains(ArtifactKind kind) {
        return kind == ArtifactKind.DISK;
    }

    /** qcow2 overlays work on any filesystem; what they need is qemu-img. */
    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return kind == ArtifactKind.DISK && Files.isExecutable(qemuImg.executable());
    }

    /**
     * Writes at {@code target} an overlay on {@code parent} (or, without one, on {@code source}'s own
     * backing file) holding only the clusters of {@code source} that differ from it; a disk
     * without either is copied whole ({@value #MODE_FLAT}). {@code source} may be held open by a
     * paused QEMU.
     */
    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        requireDisk(kind);
        context.checkpoint("reading " + source);
        QemuImg.Info info = qemuImg.info(source, true, HostCommand.timeFor(context.remaining()));
        StoredArtifact base = parent != null ? parent
                : info.backing() == null ? null
                : new StoredArtifact(ArtifactKind.DISK, info.backing(), MODE_FLAT, 0, null, null, 0);
        QemuImg.Info backing = base == null ? null : qemuImg.info(base.path(), true, HostCommand.timeFor(context.remaining()));
        try (StagedFile staged = StagedFile.beside(target)) {
            context.checkpoint("storing " + source);
            qemuImg.convert(source, true, backing, staged.path(), HostCommand.timeFor(context.remaining()));
            staged.publish();
        }
        return new StoredArtifact(ArtifactKind.DISK, target.toAbsolutePath(), base == null ? MODE_FLAT : MODE_OVERLAY,
                Files.size(target), null, base, base == null ? 0 : base.depth() + 1);
    }

    /** An empty qcow2 overlay at {@code target} on {@code stored}, which is checked first (once per version of it). */
    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        requireDisk(stored.kind());
        context.checkpoint("checking " + stored.path());
        QemuImg.Info info = checkedOnce(stored);
        try (StagedFile staged = StagedFile.beside(target)) {
            context.checkpoint("making an overlay on " + stored.path());
            qemuImg.createOverlay(info, staged.path(), HostCommand.timeFor(context.remaining()));
            staged.publish();
        }
        return new StoredArtifact(ArtifactKind.DISK, target.toAbsolutePath(), MODE_OVERLAY, Files.size(target), null,
                stored, stored.depth() + 1);
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        requireDisk(stored.kind());
        try (StagedFile staged = StagedFile.beside(target)) {
            context.checkpoint("compacting " + stored.path());
            qemuImg.convert(stored.path(), false, null, staged.path(), HostCommand.timeFor(context.remaining()));
            staged.publish();
        }
        return new StoredArtifact(ArtifactKind.DISK, target.toAbsolutePath(), MODE_FLAT, Files.size(target), null,
                null, 0);
    }

    /**
     * Every link of the chain opens and (if qcow2) passes {@code qemu-img check}, and each recorded
     * parent is the backing file the image really names.
     */
    @Override
    public void verify(StoredArtifact stored) throws IOException {
        requireDisk(stored.kind());
        verifiedChain(stored);
    }

    private QemuImg.Info verifiedChain(StoredArtifact stored) throws IOException {
        List<QemuImg.Info> chain;
        try {
            chain = qemuImg.chain(stored.path(), CHECK_TIME);
        } catch (IOException e) {
            throw new IOException("the backing chain of " + stored.path() + " does not open: " + e.getMessage(), e);
        }
        StoredArtifact recorded = stored;
        for (QemuImg.Info link : chain) {
            if (recorded != null && !sameFile(link.path(), recorded.path())) {
                throw new IOException(previous(chain, link) + " has the backing file " + link.path()
                        + ", not the recorded " + recorded.path());
            }
            if ("qcow2".equals(link.format())) {
                try {
                    qemuImg.check(link.path(), CHECK_TIME);
                } catch (IOException e) {
                    throw new IOException(link.path() + " is damaged: " + e.getMessage(), e);
                }
            }
            recorded = recorded == null ? null : recorded.parent();
        }
        if (recorded != null) {
            throw new IOException(chain.getLast().path() + " has no backing file, but " + recorded.path()
                    + " is recorded as its parent");
        }
        return chain.getFirst();
    }

    /** Removes the artifact's own file (never its backing file), and a staging file left beside it. */
    @Override
    public void delete(StoredArtifact stored) throws IOException {
        requireDisk(stored.kind());
        Files.deleteIfExists(StagedFile.stagingPath(stored.path()));
        AtomicFiles.delete(stored.path());
    }

    private QemuImg.Info checkedOnce(StoredArtifact stored) throws IOException {
        BasicFileAttributes before = Files.readAttributes(stored.path(), BasicFileAttributes.class);
        Object key = Objects.requireNonNullElse(before.fileKey(), stored.path());
        Checked known = checked.get(key);
        if (known != null && known.modified().equals(before.lastModifiedTime())) {
            return known.info();
        }
        QemuImg.Info info = verifiedChain(stored);
        checked.put(key, new Checked(before.lastModifiedTime(), info));
        return info;
    }

    private static Path previous(List<QemuImg.Info> chain, QemuImg.Info link) {
        int i = chain.indexOf(link);
        return i == 0 ? link.path() : chain.get(i - 1).path();
    }

    private static boolean sameFile(Path a, Path b) throws IOException {
        return Files.exists(a) && Files.exists(b) && Files.isSameFile(a, b);
    }

    private static void requireDisk(ArtifactKind kind) {
        if (kind != ArtifactKind.DISK) {
            throw new IllegalArgumentException("storage-qcow2 stores VM disks only, not " + kind);
        }
    }
}
