package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A verified chain: its diff links from the top down, and the plain file at its root. Every part
 * was checked in the version recorded with it; {@link #requireUnchanged()} says whether it still
 * is, after it was read.
 */
record Chain(List<Link> links, Base base) {

    /** A diff link, its header and index checked and its body hash matched. */
    record Link(Path path, DiffFile.Header header, long[] index, VerifiedFiles.Version version) {
    }

    /** The plain file at the root, and the SHA-256 of its content. */
    record Base(Path path, long size, byte[] hash, VerifiedFiles.Version version) {
    }

    /** Links to the root: 0 for a plain file. */
    int depth() {
        return links.size();
    }

    long size() {
        return links.isEmpty() ? base.size() : links.getFirst().header().size();
    }

    /** SHA-256 of the content the chain stands for. */
    byte[] contentHash() {
        return links.isEmpty() ? base.hash() : links.getFirst().header().contentHash();
    }

    Path top() {
        return links.isEmpty() ? base.path() : links.getFirst().path();
    }

    /** Every file of the chain, the top first. */
    List<Path> paths() {
        List<Path> paths = new ArrayList<>();
        links.forEach(l -> paths.add(l.path()));
        paths.add(base.path());
        return paths;
    }

    /** Throws naming the first file of the chain that changed since it was verified. */
    void requireUnchanged() throws IOException {
        for (Link l : links) {
            VerifiedFiles.requireUnchanged(l.path(), l.version());
        }
        VerifiedFiles.requireUnchanged(base.path(), base.version());
    }
}
