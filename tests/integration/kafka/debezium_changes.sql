-- The changes both capture (see debezium_types.sql): ordinary and edge values, NULLs, an
-- update and a delete (full before-images: REPLICA IDENTITY FULL).
INSERT INTO public.dbz_types (id, c_int2, c_int4, c_int8, c_num, c_num_free, c_dec, c_f4, c_f8,
  c_bool, c_text, c_varchar, c_char, c_date, c_time, c_time3, c_time0, c_timetz, c_ts, c_ts0,
  c_ts3, c_ts6, c_tstz, c_tstz0, c_tstz3, c_uuid, c_json, c_jsonb, c_xml, c_bytea, c_interval,
  c_money, c_bit1, c_bits, c_varbit, c_inet, c_cidr, c_macaddr, c_tsrange, c_oid, c_int_arr,
  c_text_arr, c_bool_arr, c_f8_arr, c_name, c_mood, c_point)
VALUES (1, -32768, 2147483647, -9223372036854775808, 12345678.9012, 3.14159265358979323846,
  99999, 1.1, 2.718281828459045, true, 'héllo "w"', 'varchar', 'ab', '2024-02-29',
  '13:45:30.123456', '13:45:30.5', '13:45:30', '13:45:30.25+02', '2024-02-29 13:45:30.123456',
  '2024-02-29 13:45:30', '2024-02-29 13:45:30.123', '2024-02-29 13:45:30.000001',
  '2024-02-29 13:45:30.5+02', '2024-02-29 13:45:30+00', '2024-02-29 13:45:30.12+00',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2.50]}', '{"b": {"c": null}}',
  '<a>x</a>', '\x00ff10', '1 year 2 mons 3 days 04:05:06.789', '1234.56', B'1',
  B'1010000001', B'101', '192.168.0.1', '10.0.0.0/8', '08:00:2b:01:02:03',
  '[2024-01-01,2024-02-01)', 4294967295, '{1,2,NULL}', '{"a","b c",NULL,""}', '{t,f}',
  '{1.5,-0.25,1e300}', 'nm', 'happy', '(1.5,2)');
INSERT INTO public.dbz_types (id) VALUES (2);
INSERT INTO public.dbz_types (id, c_int2, c_int4, c_int8, c_num, c_num_free, c_dec, c_f4, c_f8,
  c_bool, c_text, c_date, c_time, c_time3, c_timetz, c_ts, c_ts3, c_ts6, c_tstz, c_tstz3,
  c_bytea, c_interval, c_money, c_bits)
VALUES (3, 0, -1, 1, -0.0001, -12345678901234567890.123456789, -1, -0.5, 1e-300, false,
  '', '1969-12-31', '00:00:00', '23:59:59.999', '00:00:00-05:30', '1960-01-01 00:00:00',
  '1969-12-31 23:59:59.999', '2262-04-11 23:47:16.854775', '1900-01-01 00:00:00+00',
  '1970-01-01 00:00:00.001+00', '\x', '-3 days -00:00:01', '-0.99', B'0000000001');
INSERT INTO public.dbz_types (id, c_date, c_ts, c_ts3, c_tstz, c_num, c_num_free, c_f4, c_f8,
  c_time, c_tstz3, c_timetz, c_interval, c_int8, c_bits, c_varbit)
VALUES (4, 'infinity', 'infinity', '-infinity', 'infinity', 'NaN', 'NaN', 'NaN', '-Infinity',
  '24:00:00', '0044-03-15 10:00:00 BC', '13:45:30+05:30', '100 years', 9223372036854775807,
  B'0010000000', B'');
INSERT INTO public.dbz_types (id, c_date, c_ts, c_ts3, c_tstz, c_num_free, c_tstz3, c_f8, c_f4,
  c_num, c_timetz, c_bits, c_varbit)
VALUES (5, '-infinity', '-infinity', 'infinity', '-infinity', 1e20, '2024-01-01 00:00:00.1+00',
  12345678912345678, 'Infinity', 0, '23:00:00.000001-02', B'0000000000', B'1111111111111111');
UPDATE public.dbz_types SET c_int4 = 7, c_num = 0, c_text = 'changed' WHERE id = 1;
DELETE FROM public.dbz_types WHERE id = 3;
