package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.GuestLimits;

import org.junit.jupiter.api.Test;

class GuestListerTest {

    private static final FingerprintMode MODE = mode("test", "/bin/list");
    private static final FingerprintMode OTHER = mode("other", "/bin/other");

    /** A mode {@code name} whose guest listing is the command {@code command} and whose host fingerprints are "x". */
    static FingerprintMode mode(String name, String command) {
        return new FingerprintMode() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public int preference() {
                return 0;
            }

            @Override
            public String fingerprint(Path file, BasicFileAttributes attributes) {
                return "x";
            }

            @Override
            public List<String> guestListingCommand(List<String> dirs) {
                return List.of(command);
            }
        };
    }

    /** A channel that carries at most {@code maxOutput} bytes per exec and whose listing was cut there. */
    private static final class SmallChannel implements GuestChannel {
        final List<ExecRequest> asked = new ArrayList<>();

        @Override
        public PingResult ping() {
            return new PingResult(true, 1, 0);
        }

        @Override
        public ExecResult exec(ExecRequest request) {
            asked.add(request);
            return new ExecResult("x\t/w/a\0", "", 0, false, true, 1);
        }

        @Override
        public GuestLimits limits() {
            return new GuestLimits(1 << 20, 1 << 20);
        }
    }

    @Test
    void aListingPastWhatTheChannelCarriesIsA400ThatNamesTheChannelsLimit() {
        SmallChannel channel = new SmallChannel();

        ApiException e = assertThrows(ApiException.class,
                () -> GuestLister.list(channel, List.of("/w"), MODE, ListingLimits.standard()));

        assertEquals(400, e.status());
        assertEquals("the listing exceeds the 1 MiB the guest channel carries per exec; narrow the paths", e.getMessage());
        assertEquals(1 << 20, channel.asked.get(0).maxOutputBytes(), "never asks the channel for more than it carries");
    }

    /** A channel that lists the mode {@code test} natively, with what the command would print. */
    private static final class NativeChannel implements GuestChannel {
        final List<String> ran = new ArrayList<>();

        @Override
        public PingResult ping() {
            return new PingResult(true, 1, 0);
        }

        @Override
        public ExecResult exec(ExecRequest request) {
            ran.add("command " + request.args().get(0));
            return new ExecResult("c\t/w/a\0", "", 0, false, false, 1);
        }

        @Override
        public Optional<ExecResult> listFiles(String mode, List<String> dirs, ExecRequest request) {
            if (!mode.equals("test")) {
                return Optional.empty();
            }
            ran.add("native " + dirs + " within " + request.timeoutSecs() + " s");
            return Optional.of(new ExecResult("n\t/w/a\0", "", 0, false, false, 1));
        }
    }

    @Test
    void aModeTheChannelListsNativelyRunsNoCommandAndAnotherRunsItsCommand() {
        NativeChannel channel = new NativeChannel();

        FileListing natively = GuestLister.list(channel, List.of("/w"), MODE, ListingLimits.standard());
        FileListing byCommand = GuestLister.list(channel, List.of("/w"), OTHER, ListingLimits.standard());

        assertEquals(Map.of("/w/a", "n"), natively.files());
        assertEquals(Map.of("/w/a", "c"), byCommand.files());
        assertEquals("native [/w]", channel.ran.get(0).substring(0, "native [/w]".length()));
        assertEquals("command /bin/other", channel.ran.get(1));
    }
}
