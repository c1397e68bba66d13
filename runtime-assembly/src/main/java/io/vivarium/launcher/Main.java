package io.vivarium.launcher;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * Starts Vivarium: an Apache Felix framework with the bundles of the chosen features.
 *
 * <pre>
 * java -jar lib/vivarium-launcher.jar serve [--state DIR] [--port N] [--host H] [--token-file F] [--features core,api-v1,procbox,fingerprint-sha256,fingerprint-stat,metrics,storage-reflink] [--deploy DIR]
 * </pre>
 *
 * This class reads the command line and hands it to its command: {@link Serve} runs the daemon,
 * {@link AdminClient} talks to a running one ({@code plugins}, {@code features}).
 * The distribution folder is the parent of the folder holding this jar (or {@code -Dvivarium.home}).
 * Exit codes: 0 after a clean stop (SIGTERM, Ctrl-C, or the framework stopping itself), 1 when
 * the daemon cannot start or does not become healthy, 2 for a bad command line.
 */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        // The JDK's HTTP client sends a POST again, unasked, when the answer does not come on a
        // kept-alive connection; the fleet forwards execs and creates as such POSTs, which must
        // never run twice. Read once, when that client is first loaded: so before anything else.
        System.setProperty("sun.net.http.retryPost", "false");
        int code = run(Arrays.asList(args), Caller.thisProcess(), System.out, System.err);
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    static int run(List<String> args, Caller caller, PrintStream out, PrintStream err) {
        if (args.isEmpty()) {
            err.print(Options.USAGE);
            return 2;
        }
        String command = args.get(0);
        switch (command) {
            case "help", "-h", "--help" -> {
                out.print(Options.USAGE);
                out.print(AdminClient.USAGE);
                out.print(SandboxCli.USAGE);
                out.print(StateExport.USAGE);
                return 0;
            }
            case "state" -> {
                return StateExport.run(args.subList(1, args.size()), caller.workDir(), out, err);
            }
            case CliServer.COMMAND -> {
                return CliServer.run(args.subList(1, args.size()), caller.env(), err);
            }
            case "serve" -> {
                if (args.contains("--help") || args.contains("-h")) {
                    out.print(Options.USAGE);
                    return 0;
                }
                Options opts;
                try {
                    opts = Options.parse(args.subList(1, args.size()), caller.workDir());
                } catch (Options.UsageException e) {
                    err.println("vivarium: " + e.getMessage());
                    err.print(Options.USAGE);
                    return 2;
                }
                return Serve.run(opts, out, err);
            }
            default -> {
                if (isCommandLine(command)) {
                    return commandLine(command, args.subList(1, args.size()), caller, out, err);
                }
                err.println("vivarium: unknown command '" + command + "'");
                err.print(Options.USAGE);
                return 2;
            }
        }
    }

    /** Whether {@code noun} is a command that drives a running daemon, which {@link #commandLine} runs. */
    static boolean isCommandLine(String noun) {
        return switch (noun) {
            case "plugins", "features", "sandbox", "snapshot", "vm", "volume", "template", "node" -> true;
            default -> false;
        };
    }

    /** A command that drives a running daemon, for this process or for a client of {@link CliServer}. */
    static int commandLine(String noun, List<String> args, Caller caller, PrintStream out, PrintStream err) {
        return noun.equals("plugins") || noun.equals("features") ? AdminClient.run(noun, args, caller, out, err)
                : SandboxCli.run(noun, args, caller, out, err);
    }
}
