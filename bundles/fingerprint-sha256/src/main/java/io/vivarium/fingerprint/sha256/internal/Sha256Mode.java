package io.vivarium.fingerprint.sha256.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;

import io.vivarium.api.spi.FingerprintMode;

import org.osgi.service.component.annotations.Component;

/**
 * Fingerprints files by the SHA-256 of their content, the preferred mode. Whether the sandbox user
 * can read a host file is core's call (it knows the uid); in the guest the listing script decides.
 */
@Component(service = FingerprintMode.class, property = FingerprintMode.NAME_PROPERTY + "=" + Sha256Mode.NAME)
public class Sha256Mode implements FingerprintMode {

    static final String NAME = "sha256";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int preference() {
        return 100;
    }

    @Override
    public String fingerprint(Path file, BasicFileAttributes attributes) throws IOException {
        return Sha256.hex(file);
    }

    @Override
    public List<String> guestListingCommand(List<String> dirs) {
        return Sha256Listing.command(dirs);
    }
}
