import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * The PostgreSQL JDBC driver against dpstat serve, as a BI tool uses it: the
 * table browser (DatabaseMetaData), queries, prepared statements and
 * refusals. Arguments: host, port, token of alice, token of small. Prints
 * one "ok ..." line per check and exits 1 at the first failure.
 */
public class ClientMeta {
    static void check(boolean cond, String what) {
        if (!cond) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }

    static Connection connect(String host, String port, String user, String token) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", token);
        return DriverManager.getConnection("jdbc:postgresql://" + host + ":" + port + "/dpstat", p);
    }

    public static void main(String[] args) throws Exception {
        Connection c = connect(args[0], args[1], "alice", args[2]);
        DatabaseMetaData m = c.getMetaData();
        check(m.getDatabaseProductVersion().startsWith("15"), "product version " + m.getDatabaseProductVersion());

        List<String> tables = new ArrayList<>();
        ResultSet r = m.getTables(null, null, "%", new String[] {"TABLE"});
        while (r.next()) {
            tables.add(r.getString("TABLE_SCHEM") + "." + r.getString("TABLE_NAME") + ":" + r.getString("TABLE_TYPE"));
        }
        check(tables.equals(List.of("public.adult:TABLE", "public.visits:TABLE")), "getTables lists the declared tables " + tables);

        List<String> cols = new ArrayList<>();
        String ageRemarks = null;
        r = m.getColumns(null, "public", "adult", "%");
        while (r.next()) {
            cols.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME") + ":" + r.getInt("DATA_TYPE"));
            if (r.getString("COLUMN_NAME").equals("age")) {
                ageRemarks = r.getString("REMARKS");
            }
        }
        check(cols.size() == 14 && cols.get(0).equals("age:int8:" + Types.BIGINT) && cols.contains("sex:text:" + Types.VARCHAR),
              "getColumns lists the declared columns " + cols);
        check("int in [17, 90]".equals(ageRemarks), "getColumns remarks hold the declared bounds: " + ageRemarks);

        List<String> schemas = new ArrayList<>();
        r = m.getSchemas();
        while (r.next()) {
            schemas.add(r.getString("TABLE_SCHEM"));
        }
        check(schemas.contains("public"), "getSchemas " + schemas);
        r = m.getPrimaryKeys(null, "public", "adult");
        check(!r.next(), "getPrimaryKeys (none)");

        Statement s = c.createStatement();
        s.execute("SET dpstat.epsilon = 0.5");
        r = s.executeQuery("SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM adult GROUP BY sex");
        ResultSetMetaData md = r.getMetaData();
        check(md.getColumnTypeName(1).equals("text") && md.getColumnTypeName(2).equals("int8") && md.getColumnTypeName(3).equals("float8"),
              "result types text, int8, float8");
        int groups = 0;
        while (r.next()) {
            groups++;
            r.getLong("n");
        }
        check(groups == 2, "query answered with " + groups + " groups");

        // Six executions: the driver switches to a named server-side
        // statement after five, with binary transfer of some types.
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) AS n, AVG(hours_per_week) AS h FROM adult WHERE age > ? AND sex = ?");
        for (int i = 0; i < 6; i++) {
            ps.setInt(1, 20 + 5 * i);
            ps.setString(2, "Female");
            r = ps.executeQuery();
            check(r.next() && r.getLong(1) >= 0, "prepared statement execution " + (i + 1));
        }

        try {
            s.executeQuery("SELECT * FROM adult");
            check(false, "SELECT * was answered");
        } catch (SQLException e) {
            check("0A000".equals(e.getSQLState()), "refusal SQLSTATE 0A000: " + e.getSQLState());
        }
        try {
            s.executeQuery("SELECT COUNT(*) FROM secrets");
            check(false, "an unknown table was answered");
        } catch (SQLException e) {
            check("42P01".equals(e.getSQLState()), "unknown table SQLSTATE 42P01: " + e.getSQLState());
        }
        c.close();

        Connection small = connect(args[0], args[1], "small", args[3]);
        Statement ss = small.createStatement();
        ss.execute("SET dpstat.epsilon = 5");
        try {
            ss.executeQuery("SELECT COUNT(*) FROM adult");
            check(false, "a query beyond the budget was answered");
        } catch (SQLException e) {
            check("53400".equals(e.getSQLState()), "budget exceeded SQLSTATE 53400: " + e.getSQLState());
        }
        small.close();
    }
}
