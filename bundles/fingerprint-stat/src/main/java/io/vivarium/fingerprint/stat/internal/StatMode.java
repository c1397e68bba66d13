package io.vivarium.fingerprint.stat.internal;

import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;

import io.vivarium.api.spi.FingerprintMode;

import org.osgi.service.component.annotations.Component;

/**
 * Fingerprints files by {@code <size>:<mtime seconds>}, the fallback for guests without sha256sum.
 * It reads no content, so it misses a same-size rewrite that keeps the mtime.
 *
 * <p>A file's metadata is visible even when its content is not, but a file the sandbox user cannot
 * read is still {@value FingerprintMode#UNREADABLE} here, as in every mode, so that a change of
 * readability shows the same way whichever mode a baseline used. On the host core decides that (it
 * knows the uid); in the guest the listing script does.
 */
@Component(service = FingerprintMode.class, property = FingerprintMode.NAME_PROPERTY + "=" + StatMode.NAME)
public class StatMode implements FingerprintMode {

    static final String NAME = "stat";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int preference() {
        return 10;
    }

    /** Whole seconds rounded down, as stat's {@code %Y} prints them, also before 1970. */
    @Override
    public String fingerprint(Path file, BasicFileAttributes attributes) {
        return attributes.size() + ":" + attributes.lastModifiedTime().toInstant().getEpochSecond();
    }

    @Override
    public List<String> guestListingCommand(List<String> dirs) {
        return StatListing.command(dirs);
    }
}
