// Jedis (JedisSentinelPool, from Maven Central) through a Sentinel endpoint, driven by jedis.test.ts and run by java's
// source launcher with the clients cache's jedis/lib on the class path: finds the master by name, writes SET + WAIT 1 (a write
// counts as acknowledged only when a replica has it), reports where it wrote; after a line on stdin (the failover
// has started) writes until a write lands on another master (CLIENT_MODE=idle: once its pool has moved). Jedis moves
// only on the +switch-master message its pool subscribes to (a READONLY reply does not move it). Passwords come from
// the environment, never the command line. Prints one JSON object per line: ready, then moved (exit 0) or stuck.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Set;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisSentinelPool;

public class JedisClient {
  static long acked = 0;
  static long tried = 0;

  /** One SET + WAIT 1; the address of the server that took it (its side of the connection). */
  static String write(JedisSentinelPool pool) {
    try (Jedis j = pool.getResource()) {
      long n = ++tried;
      j.set("k", Long.toString(n));
      if (j.waitReplicas(1, 1000) >= 1) acked = n;
      for (String field : j.clientInfo().trim().split(" ")) {
        if (field.startsWith("laddr=")) return field.substring("laddr=".length());
      }
      return "?";
    }
  }

  static String quoted(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
  }

  static void say(String json) {
    System.out.println(json);
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    String name = args[2];
    JedisClientConfig master = DefaultJedisClientConfig.builder()
        .password(System.getenv("REDIS_PASSWORD")).socketTimeoutMillis(2000).build();
    JedisClientConfig sentinel = DefaultJedisClientConfig.builder()
        .password(System.getenv("SENTINEL_PASSWORD")).socketTimeoutMillis(2000).build();
    Set<HostAndPort> sentinels = Set.of(new HostAndPort(args[0], Integer.parseInt(args[1])));
    JedisSentinelPool pool = new JedisSentinelPool(name, sentinels, master, sentinel);
    String first = write(pool);
    String discovered = pool.getCurrentHostMaster().toString();
    say("{\"event\":\"ready\",\"master\":" + quoted(first) + ",\"discovered\":" + quoted(discovered)
        + ",\"acked\":" + acked + "}");
    new BufferedReader(new InputStreamReader(System.in)).readLine();
    long deadline = System.nanoTime() + Long.parseLong(System.getenv().getOrDefault("CLIENT_DEADLINE_MS", "20000"))
        * 1_000_000L;
    // CLIENT_MODE=idle: no write until the pool has heard +switch-master (so none holds a connection meanwhile).
    if ("idle".equals(System.getenv("CLIENT_MODE"))) {
      while (pool.getCurrentHostMaster().toString().equals(discovered) && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
    }
    long errors = 0;
    String lastError = "";
    while (System.nanoTime() < deadline) {
      try {
        String at = write(pool);
        if (!at.equals(first)) {
          say("{\"event\":\"moved\",\"master\":" + quoted(at) + ",\"acked\":" + acked + ",\"errors\":" + errors + "}");
          System.exit(0);
        }
      } catch (Exception e) {
        errors++;
        lastError = String.valueOf(e.getMessage());
      }
      Thread.sleep(20);
    }
    say("{\"event\":\"stuck\",\"acked\":" + acked + ",\"errors\":" + errors + ",\"last_error\":"
        + quoted(lastError) + "}");
    System.exit(1);
  }
}
