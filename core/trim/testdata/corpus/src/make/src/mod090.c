#include <stdio.h>

int mod090(int x)
{
    int unused_90 = 90;
    return x + 90;
}
