#include <stdio.h>

int mod138(int x)
{
    int unused_138 = 138;
    return x + 138;
}
