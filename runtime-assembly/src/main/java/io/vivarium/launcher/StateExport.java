package io.vivarium.launcher;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.Properties;

import io.vivarium.common.state.PostgresExport;
import io.vivarium.common.state.PostgresUrl;

/**
 * {@code vivarium state export}: a stopped daemon's records, from PostgreSQL back into its state
 * directory ({@link PostgresExport}), so that it can start on the file store again.
 */
final class StateExport {
    static final String USAGE = """
            usage: vivarium state export [--state DIR] --state-url postgresql://USER:PASSWORD@HOST:PORT/DATABASE
              brings the node's records from PostgreSQL back into DIR (default ./var) and clears its move mark;
              the daemon must be stopped. Then start it without the state-postgres feature (docs/state.md).
            """;

    private StateExport() {
    }

    static int run(List<String> args, Path cwd, PrintStream out, PrintStream err) {
        Path state = cwd.resolve("var");
        String url = null;
        if (args.isEmpty() || !args.get(0).equals("export")) {
            err.print(USAGE);
            return 2;
        }
        for (int i = 1; i < args.size(); i++) {
            String a = args.get(i);
            if ((a.equals("--state") || a.equals("--state-url")) && i + 1 < args.size()) {
                if (a.equals("--state")) {
                    state = cwd.resolve(args.get(++i));
                } else {
                    url = args.get(++i);
                }
            } else {
                err.println("vivarium: unknown argument '" + a + "'");
                err.print(USAGE);
                return 2;
            }
        }
        PostgresUrl db;
        try {
            db = PostgresUrl.parse(url);
        } catch (IllegalArgumentException e) {
            err.println("vivarium: " + e.getMessage());
            err.print(USAGE);
            return 2;
        }
        Path nodeFile = state.resolve("store").resolve("node");
        if (!Files.isRegularFile(nodeFile)) {
            err.println("vivarium: " + nodeFile + " is missing: " + state + " is not the state directory of a daemon");
            return 1;
        }
        try {
            StateLock.acquire(state); // held until this process ends: no daemon starts on the directory meanwhile
        } catch (IllegalStateException | IOException e) {
            err.println("vivarium: cannot export: " + e.getMessage());
            return 1;
        }
        try (Connection c = connect(db)) {
            String node = Files.readString(nodeFile).strip();
            int n = new PostgresExport().export(c, state, node);
            out.println("exported " + n + " record(s) of node " + node + " from " + db + " into " + state
                    + "; start the daemon without the state-postgres feature");
            return 0;
        } catch (IOException | SQLException e) {
            err.println("vivarium: cannot export: " + db.mask(e.getMessage()));
            return 1;
        }
    }

    private static Connection connect(PostgresUrl db) throws SQLException {
        Properties p = new Properties();
        if (db.user() != null) {
            p.setProperty("user", db.user());
        }
        if (db.password() != null) {
            p.setProperty("password", db.password());
        }
        p.setProperty("connectTimeout", "10");
        return DriverManager.getConnection(db.jdbc(), p);
    }
}
