package io.vivarium.api.spi;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Copies of snapshot images between the daemons of a fleet, provided by core: the node that holds
 * a tag describes its image ({@link #manifest}) and serves its files ({@link #open}); a node that
 * lacks it receives a verified copy ({@link #receive}) and forks it like its own from then on.
 * A copy is standalone (no parent: the chain it came from stays with its holder) and is deleted
 * like any tag. Every method throws {@link io.vivarium.api.ApiException} for what the caller can
 * fix or retry. Since 2.3.
 */
@ProviderType
public interface SnapshotCopies {

    /**
     * What a copy of a tenant's ready tag is made of, computed once per image: 404 unknown tag,
     * 409 an image that is not ready or not movable (its artifacts name files outside it), saying why.
     */
    SnapshotManifest manifest(String tenant, String tag);

    /** One regular file of the tag's manifest, to send; 404 for a path the manifest does not list. */
    InputStream open(String tenant, String tag, String path) throws IOException;

    /**
     * Makes a copy of the manifest's tag for {@code tenant} from the files {@code source} gives,
     * each checked against its size and SHA-256 before the copy is published: the tag is reserved
     * first (409 if this daemon holds a tag of that name that is not such a copy; nothing is done
     * if it holds the copy already), and a failure, or a crash, leaves nothing behind.
     *
     * @throws io.vivarium.api.ApiException 502 naming the file when the source fails or a file does not match
     */
    void receive(String tenant, SnapshotManifest manifest, Source source);

    /** Every tag this daemon holds, of every tenant, its own and its copies. */
    List<HeldImage> held();

    /** Where {@link #receive} reads the files from. */
    @FunctionalInterface
    interface Source {
        InputStream open(SnapshotManifest.Entry file) throws IOException;
    }
}
