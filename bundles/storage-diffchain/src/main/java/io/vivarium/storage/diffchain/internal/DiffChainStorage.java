package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;
import io.vivarium.common.files.StagedFile;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Memory images (a VM's RAM file) as chains of page diffs ({@link DiffFile}): a store on a parent
 * keeps only the 4 KiB pages that differ from the parent's content, with the parent's content hash;
 * without a parent it keeps a plain copy, cloned where the filesystem can ({@link FileClones}).
 * {@link #materialise} and {@link #compact} verify every link (once per version of its file:
 * {@link VerifiedFiles}), clone or copy the root and write only the links' pages onto it. Modes:
 * {@value #MODE_DIFF} for a link, {@code reflink} or {@code copy} for a standalone file (how its
 * root was made; {@code bytesWritten} counts the pages written on top). Public for the benchmark.
 */
@Component(service = StorageStrategy.class, property = StorageStrategy.NAME_PROPERTY + "=" + DiffChainStorage.NAME,
        configurationPid = DiffChainConfig.PID)
@Designate(ocd = DiffChainConfig.class)
public final class DiffChainStorage implements StorageStrategy {

    public static final String NAME = "diffchain";
    public static final String MODE_DIFF = "diff";
    /** How long after its last change a verified file is trusted to be remembered (see {@link VerifiedFiles}). */
    public static final Duration RACY_WINDOW = Duration.ofSeconds(2);

    private static final System.Logger LOG = System.getLogger(DiffChainStorage.class.getName());

    private final FileClones clones = new FileClones();
    private final ChainVerifier chains;
    private final int maxDepth;

    @Activate
    public DiffChainStorage(DiffChainConfig config) {
        this(config.max__chain__depth(), RACY_WINDOW);
    }

    /**
     * @param maxDepth the deepest chain a store makes
     * @param racyWindow a file changed less than this before it is verified is verified again next time
     */
    public DiffChainStorage(int maxDepth, Duration racyWindow) {
        if (maxDepth < 1) {
            throw new IllegalArgumentException("max_chain_depth must be at least 1, got " + maxDepth);
        }
        this.maxDepth = maxDepth;
        this.chains = new ChainVerifier(new VerifiedFiles(racyWindow));
    }

    /** Files hashed whole so far (each link or root read for verification): what remembering saves. */
    public int filesHashed() {
        return chains.reads();
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return EnumSet.of(ArtifactKind.MEMORY);
    }

    @Override
    public Set<String> modes() {
        return Set.of(MODE_DIFF, FileClones.REFLINK, FileClones.COPY);
    }

    @Override
    public boolean chains(ArtifactKind kind) {
        return kind == ArtifactKind.MEMORY;
    }

    /** Works on any filesystem (the root of a chain is cloned where it can be, copied elsewhere). */
    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return kind == ArtifactKind.MEMORY;
    }

    /**
     * Given a parent, writes a diff link on it; a plain copy instead (and says so) when there is no
     * parent, when the source's size differs from the parent's or is not whole pages, or when the
     * chain is already {@code max_chain_depth} deep.
     */
    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        requireMemory(kind);
        context.checkpoint("storing " + source);
        if (!Files.isRegularFile(source)) {
            throw new NoSuchFileException(source.toString(), null, "nothing to store");
        }
        if (parent == null) {
            return storePlain(source, target, context);
        }
        Chain chain = verifiedChain(parent, false);
        long size = Files.size(source);
        String plainBecause = size != chain.size() ? "it is " + size + " bytes and its parent " + chain.size()
                : size % DiffFile.PAGE != 0 ? "it is not a whole number of 4 KiB pages"
                : chain.depth() >= maxDepth ? "its parent's chain is " + chain.depth() + " links deep (max_chain_depth)"
                : null;
        if (plainBecause != null) {
            LOG.log(Level.INFO, "storing " + source + " standalone, not as a diff: " + plainBecause);
            return storePlain(source, target, context);
        }
        Path absolute = target.toAbsolutePath().normalize();
        Files.createDirectories(absolute.getParent());
        String reference = absolute.getParent().relativize(chain.top()).toString();
        DiffFile.Header header;
        try (StagedFile staged = StagedFile.beside(absolute)) {
            try (OpenChain open = new OpenChain(chain);
                    FileChannel in = FileChannel.open(source);
                    FileChannel out = FileChannel.open(staged.path(), StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE)) {
                context.checkpoint("comparing " + source + " with " + chain.top());
                header = PageDiff.write(in, open, chain, reference, out, context);
            }
            chain.requireUnchanged();
            context.checkpoint("putting " + absolute + " in place");
            staged.publish();
        }
        return new StoredArtifact(ArtifactKind.MEMORY, absolute, MODE_DIFF, header.fileLength(),
                ChainVerifier.hex(header.contentHash()), recordedParent(parent, chain), chain.depth() + 1);
    }

    /** A writable standalone file with the chain's content: the root cloned or copied, the links' pages written on it. */
    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return assemble(stored, target, false, context);
    }

    /**
     * Like {@link #materialise}, made durable, and read back to check that it holds the chain's
     * content hash before it is put in place.
     */
    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return assemble(stored, target, true, context);
    }

    /** Reads every file of the chain again (forgetting what was remembered) and names the first bad link. */
    @Override
    public void verify(StoredArtifact stored) throws IOException {
        requireMemory(stored.kind());
        verifiedChain(stored, true);
    }

    /** Removes the artifact's file and a staging file left beside it; never its parent. */
    @Override
    public void delete(StoredArtifact stored) throws IOException {
        requireMemory(stored.kind());
        Files.deleteIfExists(StagedFile.stagingPath(stored.path()));
        chains.files().forget(stored.path());
        AtomicFiles.delete(stored.path());
    }

    private StoredArtifact storePlain(Path source, Path target, OperationContext context) throws IOException {
        Path absolute = target.toAbsolutePath().normalize();
        Files.createDirectories(absolute.getParent());
        String mode;
        byte[] hash;
        try (StagedFile staged = StagedFile.beside(absolute)) {
            mode = clones.cloneOrCopy(source, staged.path(), () -> HostCommand.timeFor(context.remaining()));
            context.checkpoint("hashing " + absolute);
            hash = chains.hash(staged.path());
            context.checkpoint("putting " + absolute + " in place");
            staged.publish();
        }
        return new StoredArtifact(ArtifactKind.MEMORY, absolute, mode,
                mode.equals(FileClones.COPY) ? Files.size(absolute) : 0, ChainVerifier.hex(hash), null, 0);
    }

    private StoredArtifact assemble(StoredArtifact stored, Path target, boolean durable, OperationContext context)
            throws IOException {
        requireMemory(stored.kind());
        context.checkpoint("verifying " + stored.path());
        Chain chain = verifiedChain(stored, false);
        Path absolute = target.toAbsolutePath().normalize();
        Files.createDirectories(absolute.getParent());
        String mode;
        long written;
        try (StagedFile staged = StagedFile.beside(absolute)) {
            context.checkpoint("cloning " + chain.base().path());
            mode = clones.cloneOrCopy(chain.base().path(), staged.path(), () -> HostCommand.timeFor(context.remaining()));
            written = mode.equals(FileClones.COPY) ? chain.base().size() : 0;
            if (chain.depth() > 0) {
                context.checkpoint("writing the pages of " + chain.depth() + " links onto " + absolute);
                try (OpenChain open = new OpenChain(chain);
                        FileChannel out = FileChannel.open(staged.path(), StandardOpenOption.WRITE)) {
                    written += open.writePages(out);
                }
            }
            chain.requireUnchanged();
            if (durable && !MessageDigest.isEqual(chain.contentHash(), chains.hash(staged.path()))) {
                throw new IOException("the assembled copy of " + stored.path() + " does not hold the chain's content "
                        + "(hash " + ChainVerifier.hex(chain.contentHash()) + "); nothing was written at " + absolute);
            }
            context.checkpoint("putting " + absolute + " in place");
            if (durable) {
                staged.publish();
            } else {
                staged.publishUnsynced();
            }
        }
        return new StoredArtifact(ArtifactKind.MEMORY, absolute, mode, written, ChainVerifier.hex(chain.contentHash()),
                null, 0);
    }

    /**
     * The verified chain of {@code stored}, checked against the parents its caller recorded (if
     * any), and against its recorded content hash (if any).
     */
    private Chain verifiedChain(StoredArtifact stored, boolean fresh) throws IOException {
        Boolean diff = stored.mode() == null ? null : MODE_DIFF.equals(stored.mode());
        Chain chain = chains.verify(stored.path(), diff, fresh);
        List<Path> files = chain.paths();
        int n = 1;
        for (StoredArtifact recorded = stored.parent(); recorded != null; recorded = recorded.parent(), n++) {
            if (n >= files.size()) {
                throw new IOException(files.getLast() + " stands alone, but " + recorded.path()
                        + " is recorded as its parent");
            }
            if (!Files.exists(recorded.path()) || !Files.isSameFile(recorded.path(), files.get(n))) {
                throw new IOException("link " + n + " (" + files.get(n - 1) + ") has the parent " + files.get(n)
                        + ", not the recorded " + recorded.path());
            }
        }
        if (stored.contentHash() != null && !stored.contentHash().equals(ChainVerifier.hex(chain.contentHash()))) {
            throw new IOException(stored.path() + " does not hold the content recorded for it: its content hash is "
                    + ChainVerifier.hex(chain.contentHash()) + ", recorded " + stored.contentHash());
        }
        return chain;
    }

    /** The parent as the caller gave it when its depth is right, else as the chain was found. */
    private static StoredArtifact recordedParent(StoredArtifact given, Chain chain) {
        if (given.depth() == chain.depth()) {
            return given;
        }
        StoredArtifact parent = new StoredArtifact(ArtifactKind.MEMORY, chain.base().path(), null, 0,
                ChainVerifier.hex(chain.base().hash()), null, 0);
        for (int i = chain.links().size() - 1; i >= 0; i--) {
            Chain.Link l = chain.links().get(i);
            parent = new StoredArtifact(ArtifactKind.MEMORY, l.path(), MODE_DIFF, 0,
                    ChainVerifier.hex(l.header().contentHash()), parent, l.header().depth());
        }
        return parent;
    }

    private static void requireMemory(ArtifactKind kind) {
        if (kind != ArtifactKind.MEMORY) {
            throw new IllegalArgumentException("storage-diffchain stores memory images only, not " + kind);
        }
    }
}
