package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;

import io.vivarium.api.spi.FingerprintMode;

/** Simple fingerprint modes for tests: the real ones are bundles of their own. */
final class TestModes {
    private TestModes() {
    }

    static FingerprintMode content() {
        return new Mode("sha256", 100) {
            @Override
            public String fingerprint(Path file, BasicFileAttributes attributes) throws IOException {
                try {
                    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
                } catch (java.security.NoSuchAlgorithmException e) {
                    throw new IllegalStateException(e);
                }
            }
        };
    }

    static FingerprintMode stat() {
        return new Mode("stat", 10) {
            @Override
            public String fingerprint(Path file, BasicFileAttributes a) {
                return a.size() + ":" + a.lastModifiedTime().toMillis() / 1000;
            }
        };
    }

    /** A mode whose guest listing is {@link io.vivarium.testkit.FakeCheckpoints}'s fake listing program. */
    static FingerprintMode fakeGuest() {
        return new Mode("sha256", 100) {
            @Override
            public String fingerprint(Path file, BasicFileAttributes attributes) {
                throw new UnsupportedOperationException("a fake guest's files are listed in the guest");
            }

            @Override
            public List<String> guestListingCommand(List<String> dirs) {
                return java.util.stream.Stream.concat(java.util.stream.Stream.of(io.vivarium.testkit.FakeCheckpoints.LIST),
                        dirs.stream()).toList();
            }
        };
    }

    private abstract static class Mode implements FingerprintMode {
        private final String name;
        private final int preference;

        Mode(String name, int preference) {
            this.name = name;
            this.preference = preference;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public int preference() {
            return preference;
        }

        @Override
        public List<String> guestListingCommand(List<String> dirs) {
            throw new UnsupportedOperationException();
        }
    }
}
