package io.vivarium.api.spi;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A way to fingerprint regular files for baselines and change sets ({@code sha256}, {@code stat}).
 * Register one OSGi service per mode with the service property {@value #NAME_PROPERTY}; core picks
 * the available mode with the highest {@link #preference()} for a new baseline and refuses (409)
 * to compare listings of different modes.
 */
@ConsumerType
public interface FingerprintMode {

    /** Service property naming the mode, e.g. {@code vivarium.fingerprint=sha256}. */
    String NAME_PROPERTY = "vivarium.fingerprint";

    /** The fingerprint of a file the sandbox user cannot read, in every mode. */
    String UNREADABLE = "unreadable";

    String name();

    /** Higher is preferred when core chooses a mode for a new baseline (sha256 over stat). */
    int preference();

    /**
     * The fingerprint of a regular file on the host. Called from many threads at once; must stream
     * the content, never hold a whole file in memory.
     */
    String fingerprint(Path file, BasicFileAttributes attributes) throws IOException;

    /**
     * The argv a guest runs through {@link GuestChannel#exec} to list, with this mode's
     * fingerprints, the regular files on the same filesystem below each of {@code dirs}
     * ({@code find -xdev -type f} semantics). Output: one record per file,
     * {@code <fingerprint> TAB <path> NUL}, with {@value #UNREADABLE} for files the guest user cannot
     * read. Any failure of the walk must end in a non-zero exit status. The directories are passed
     * as separate arguments and are never interpreted by the shell.
     */
    List<String> guestListingCommand(List<String> dirs);
}
