-- The table DebeziumOnBroker.* captures with Debezium's PostgreSQL connector and with cppcdc's
-- debezium_json codec side by side: a column of each common type (and of a few types whose
-- encodings differ, which the comparison lists as known differences).
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE public.dbz_types (
  id int4 PRIMARY KEY,
  c_int2 int2, c_int4 int4, c_int8 int8,
  c_num numeric(12,4), c_num_free numeric, c_dec decimal(5,0),
  c_f4 real, c_f8 double precision,
  c_bool boolean,
  c_text text, c_varchar varchar(20), c_char char(3),
  c_date date,
  c_time time, c_time3 time(3), c_time0 time(0), c_timetz timetz,
  c_ts timestamp, c_ts0 timestamp(0), c_ts3 timestamp(3), c_ts6 timestamp(6),
  c_tstz timestamptz, c_tstz0 timestamptz(0), c_tstz3 timestamptz(3),
  c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml, c_bytea bytea,
  c_interval interval,
  c_money money, c_bit1 bit(1), c_bits bit(10), c_varbit varbit(16),
  c_inet inet, c_cidr cidr, c_macaddr macaddr, c_tsrange tsrange, c_oid oid,
  c_int_arr int4[], c_text_arr text[], c_bool_arr boolean[], c_f8_arr float8[],
  c_notnull int8 NOT NULL DEFAULT 5,
  c_name name, c_mood mood, c_point point
);
ALTER TABLE public.dbz_types REPLICA IDENTITY FULL;
